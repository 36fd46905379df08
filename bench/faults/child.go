package faults

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/locklab/locklab/bench/env"
	"github.com/locklab/locklab/internal/history"
	"github.com/locklab/locklab/internal/proc"
)

// A holder the fault scoreboard pauses (SIGSTOP) or kills (SIGKILL) runs
// in a child process, as a real client would: this same binary, started
// with faultChildEnv set to its actorSpec, serving one actor over two
// pipes (fds 3 and 4) in JSON lines. The driver sends
//
//	{"t":"op","id":1,"op":"warm","arg":"<key>"}   warm up on another key
//	{"t":"op","id":2,"op":"begin","arg":"5s"}    lock, enter, read
//	{"t":"op","id":3,"op":"finish"}              work until go (or told), write, exit, unlock
//	{"t":"go"}                                   the fault is over: finish the work
//
// and the child answers with {"t":"event","event":{...}} for the history
// (stamped on CLOCK_MONOTONIC, which the driver's clock shares) and
// {"t":"done","id":2,"err":"..."} when an op returns. The child exits when
// its input closes. Processes are started with internal/proc, so none
// outlives the bench.

type childMsg struct {
	T     string         `json:"t"`
	ID    int            `json:"id,omitempty"`
	Op    string         `json:"op,omitempty"`
	Arg   string         `json:"arg,omitempty"`
	Err   string         `json:"err,omitempty"`
	Event *history.Event `json:"event,omitempty"`
}

// holder is A, in this process (actor) or in a child (remoteActor).
type holder interface {
	warm(ctx context.Context, key string) error
	begin(ctx context.Context, bound time.Duration) error
	finish(ctx context.Context) error
	Release()
	Close()
}

// FaultChildMain serves one actor over fds 3 and 4, then returns the exit
// code.
func FaultChildMain(specJSON string) int {
	var spec actorSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		fmt.Fprintf(os.Stderr, "bench: fault child: bad %s: %v\n", env.FaultChildEnv, err)
		return 2
	}
	in, out := proc.Piped()
	if err := serveActor(spec, in, out); err != nil {
		fmt.Fprintf(os.Stderr, "bench: fault child %s %s: %v\n", spec.Impl, spec.Name, err)
		return 1
	}
	return 0
}

// serveActor runs the child's side of the protocol until r ends.
func serveActor(spec actorSpec, r io.Reader, w io.Writer) error {
	var mu sync.Mutex
	enc := json.NewEncoder(w)
	send := func(m childMsg) {
		mu.Lock()
		defer mu.Unlock()
		_ = enc.Encode(m)
	}
	a, err := newActor(spec, history.ClockAt(spec.ClockBase), func(e history.Event) { send(childMsg{T: "event", Event: &e}) }, nil)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() {
		cancel()
		a.Release()
		wg.Wait()
		a.Close()
	}()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var m childMsg
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			return fmt.Errorf("bad message %q: %w", sc.Bytes(), err)
		}
		switch m.T {
		case "go":
			a.Release()
		case "op":
			wg.Go(func() {
				var err error
				switch m.Op {
				case "warm":
					err = a.warm(ctx, m.Arg)
				case "begin":
					var d time.Duration
					if d, err = time.ParseDuration(m.Arg); err == nil {
						err = a.begin(ctx, d)
					}
				case "finish":
					err = a.finish(ctx)
				default:
					err = fmt.Errorf("no op %q", m.Op)
				}
				done := childMsg{T: "done", ID: m.ID}
				if err != nil {
					done.Err = err.Error()
				}
				send(done)
			})
		}
	}
	return sc.Err()
}

// remoteActor is the driver's side of a child.
type remoteActor struct {
	name   string
	cmd    *exec.Cmd
	out    io.WriteCloser
	enc    *json.Encoder
	stderr *lockedBuffer
	gone   chan struct{} // closed when the child's output ended

	mu      sync.Mutex // protects enc, nextID, pending
	nextID  int
	pending map[int]chan error

	waitOnce sync.Once
}

// errChildGone is the error of ops cut off by the child's death.
var errChildGone = errors.New("client process gone")

// startChild starts a child process serving spec; its events go to record.
func startChild(spec actorSpec, record func(history.Event)) (*remoteActor, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("faults: find this program to start a client process: %w", err)
	}
	specJSON, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), env.FaultChildEnv+"="+string(specJSON),
		"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	stderr := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = stderr, stderr
	toChild, fromChild, err := proc.StartPiped(cmd)
	if err != nil {
		return nil, fmt.Errorf("faults: start client process: %w", err)
	}
	ra := &remoteActor{name: spec.Name, cmd: cmd, out: toChild, enc: json.NewEncoder(toChild),
		stderr: stderr, gone: make(chan struct{}), pending: map[int]chan error{}}
	go ra.read(fromChild, record)
	return ra, nil
}

func (ra *remoteActor) read(r io.ReadCloser, record func(history.Event)) {
	defer close(ra.gone)
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var m childMsg
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		switch m.T {
		case "event":
			if m.Event != nil {
				m.Event.Client = ra.name
				record(*m.Event)
			}
		case "done":
			ra.mu.Lock()
			ch := ra.pending[m.ID]
			delete(ra.pending, m.ID)
			ra.mu.Unlock()
			if ch != nil {
				if m.Err != "" {
					ch <- errors.New(m.Err)
				} else {
					ch <- nil
				}
			}
		}
	}
	ra.mu.Lock()
	defer ra.mu.Unlock()
	for id, ch := range ra.pending {
		ch <- errChildGone
		delete(ra.pending, id)
	}
}

// call runs op in the child and waits for it.
func (ra *remoteActor) call(ctx context.Context, op, arg string) error {
	ch := make(chan error, 1)
	ra.mu.Lock()
	ra.nextID++
	id := ra.nextID
	ra.pending[id] = ch
	err := ra.enc.Encode(childMsg{T: "op", ID: id, Op: op, Arg: arg})
	ra.mu.Unlock()
	if err != nil {
		return fmt.Errorf("%w: %v", errChildGone, err)
	}
	select {
	case err := <-ch:
		return err
	case <-ra.gone:
		select {
		case err := <-ch:
			return err
		default:
			return errChildGone
		}
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (ra *remoteActor) warm(ctx context.Context, key string) error { return ra.call(ctx, "warm", key) }

func (ra *remoteActor) begin(ctx context.Context, bound time.Duration) error {
	return ra.call(ctx, "begin", bound.String())
}

func (ra *remoteActor) finish(ctx context.Context) error { return ra.call(ctx, "finish", "") }

func (ra *remoteActor) Release() {
	ra.mu.Lock()
	defer ra.mu.Unlock()
	_ = ra.enc.Encode(childMsg{T: "go"})
}

// freeze stops the child with SIGSTOP and returns once it is stopped.
func (ra *remoteActor) freeze() error {
	if err := proc.Signal(ra.cmd, syscall.SIGSTOP); err != nil {
		return err
	}
	return proc.WaitState(ra.cmd.Process.Pid, "T", 5*time.Second)
}

// thaw resumes a frozen child.
func (ra *remoteActor) thaw() error { return proc.Signal(ra.cmd, syscall.SIGCONT) }

// kill crashes the child with SIGKILL and waits until it is gone.
func (ra *remoteActor) kill() error {
	if err := proc.Signal(ra.cmd, syscall.SIGKILL); err != nil {
		return err
	}
	<-ra.gone
	ra.wait()
	return nil
}

func (ra *remoteActor) wait() { ra.waitOnce.Do(func() { _ = ra.cmd.Wait() }) }

// Close stops the child: its input closes, so it releases what it holds
// and exits; one that does not within 5s is killed.
func (ra *remoteActor) Close() {
	_ = ra.out.Close()
	_ = proc.Signal(ra.cmd, syscall.SIGCONT)
	select {
	case <-ra.gone:
	case <-time.After(5 * time.Second):
		_ = proc.Signal(ra.cmd, syscall.SIGKILL)
		<-ra.gone
	}
	ra.wait()
}

// lockedBuffer is a bytes buffer safe for exec.Cmd's writer and a reader.
type lockedBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.b) < 64<<10 {
		l.b = append(l.b, p...)
	}
	return len(p), nil
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}
