package labs

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/locklab/locklab/internal/history"
)

// The driver and a client talk in JSON lines. Driver to client:
//
//	{"t":"op","id":7,"op":"lock"}      run an operation
//	{"t":"cancel","id":7}              cancel its context
//	{"t":"arm","op":"after-setnx"}     park at this hook point next time
//	{"t":"arm","op":"...","arg":"off"} disarm it (acknowledged as "armed")
//	{"t":"continue"}                   leave the hook point
//	{"t":"crash"}                      close the connections, then leave the hook point (acknowledged as "armed")
//
// Client to driver:
//
//	{"t":"event","event":{...}}        an event for the history
//	{"t":"armed","op":"after-setnx"}   the hook point is armed
//	{"t":"parked","op":"after-setnx"}  parked at a hook point
//	{"t":"done","id":7,"out":"true","err":"...","labels":["not held"]}
//
// Events of an operation are sent before its "done", on one ordered stream.
type msg struct {
	T      string         `json:"t"`
	ID     int            `json:"id,omitempty"`
	Op     string         `json:"op,omitempty"`
	Arg    string         `json:"arg,omitempty"`
	Out    string         `json:"out,omitempty"`
	Err    string         `json:"err,omitempty"`
	Labels []string       `json:"labels,omitempty"`
	Event  *history.Event `json:"event,omitempty"`
}

// childEnv carries a child process's spec; when set, [Main] serves instead
// of running tests.
const childEnv = "LOCKLAB_LAB_CHILD"

// childSpec is what a child process needs to build its client.
type childSpec struct {
	Impl      string `json:"impl"`
	Env       *Env   `json:"env"`
	ClockBase int64  `json:"clock_base"`
}

// encoder writes messages from several goroutines.
type encoder struct {
	mu  sync.Mutex
	enc *json.Encoder
	err error
}

func (e *encoder) send(m msg) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err == nil {
		e.err = e.enc.Encode(m)
	}
	return e.err
}

// serve runs a client: it builds the Local, executes the driver's messages
// from r and reports on w until r ends. Operations still running then are
// cancelled and waited for. A client served in the test's own process
// (inProcess) then releases what its lock still holds ([Local.releaseHeld]),
// as a child's exit does, so that the next test starts from a free lock.
func serve(spec childSpec, r io.Reader, w io.Writer, inProcess bool) error {
	impl, ok := lookupImpl(spec.Impl)
	if !ok {
		return fmt.Errorf("labs: no Impl named %q is registered in this binary", spec.Impl)
	}
	out := &encoder{enc: json.NewEncoder(w)}
	local := newLocal(spec.Env, impl, history.ClockAt(spec.ClockBase),
		func(e history.Event) { _ = out.send(msg{T: "event", Event: &e}) },
		func(point string) { _ = out.send(msg{T: "parked", Op: point}) })
	ctx, cancelAll := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() {
		// A driver that goes away ends every operation, parked or blocked
		// (their contexts are children of ctx).
		cancelAll()
		local.resume()
		wg.Wait()
		if inProcess {
			local.releaseHeld()
		}
		local.Close()
	}()
	var mu sync.Mutex                       // protects cancels
	cancels := map[int]context.CancelFunc{} // every operation's, until the client stops

	in := bufio.NewScanner(r)
	in.Buffer(make([]byte, 64<<10), 16<<20)
	for in.Scan() {
		var m msg
		if err := json.Unmarshal(in.Bytes(), &m); err != nil {
			return fmt.Errorf("labs: client %s: bad message %q: %w", spec.Env.Client, in.Bytes(), err)
		}
		switch m.T {
		case "op":
			// An operation's context ends when the driver cancels it or the
			// client stops, not when the operation returns: a lock may tie
			// its hold to the context Lock got (package watchdog does).
			opCtx, cancel := context.WithCancel(ctx)
			mu.Lock()
			cancels[m.ID] = cancel
			mu.Unlock()
			wg.Go(func() {
				res, err := local.Do(opCtx, m.Op, m.Arg)
				done := msg{T: "done", ID: m.ID, Out: res}
				if err != nil {
					done.Err, done.Labels = err.Error(), labels(err)
				}
				_ = out.send(done)
			})
		case "cancel":
			mu.Lock()
			if c := cancels[m.ID]; c != nil {
				c()
			}
			mu.Unlock()
		case "arm":
			if m.Arg == "off" {
				local.disarm(m.Op)
			} else {
				local.arm(m.Op, m.Arg == "silent")
			}
			_ = out.send(msg{T: "armed", Op: m.Op})
		case "continue":
			local.resume()
		case "crash":
			local.crash()
			_ = out.send(msg{T: "armed", Op: "crash"})
		}
	}
	return in.Err()
}

// childMain serves one client in a child process over fds 3 (in) and 4
// (out), then exits.
func childMain(specJSON string) int {
	var spec childSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		fmt.Fprintf(os.Stderr, "labs: child: bad %s: %v\n", childEnv, err)
		return 2
	}
	in, out := os.NewFile(3, "driver-in"), os.NewFile(4, "driver-out")
	if err := serve(spec, in, out, false); err != nil {
		fmt.Fprintf(os.Stderr, "labs: child %s: %v\n", spec.Env.Client, err)
		return 1
	}
	return 0
}
