package labs

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/locklab/locklab/internal/proc"
)

// Client is the scenario's remote control of one client, which runs in a
// goroutine ([Scene.Client]) or in a child process ([Scene.Process]).
// Operations block until the client answers; [Client.Go] starts one
// without waiting. Every failure of the harness itself (a client that died
// unexpectedly, the scene's deadline) fails the test.
type Client struct {
	s    *Scene
	name string
	out  *encoder
	in   io.Closer // the driver-to-client stream; closing it stops the client

	cmd      *exec.Cmd // nil for a goroutine client
	waitOnce sync.Once
	stderr   *lockedBuffer // a child's stderr, shown when the test fails
	gone     chan struct{} // closed when the client's stream ended

	mu      sync.Mutex // protects the fields below
	nextID  int
	calls   map[int]*Call
	parked  string        // hook point the client is parked at, "" if none
	parkedC chan struct{} // closed and replaced when the client parks
	killed  bool

	armed chan struct{} // one value per "armed" acknowledgement
}

// Call is an operation in flight.
type Call struct {
	c    *Client
	id   int
	op   string
	arg  string
	done chan struct{}
	out  string
	err  error
}

// Name returns the client's name.
func (c *Client) Name() string { return c.name }

// Go starts op (see [Local.Do]) and returns at once.
func (c *Client) Go(op, arg string) *Call {
	c.mu.Lock()
	c.nextID++
	call := &Call{c: c, id: c.nextID, op: op, arg: arg, done: make(chan struct{})}
	c.calls[call.id] = call
	c.mu.Unlock()
	if err := c.out.send(msg{T: "op", ID: call.id, Op: op, Arg: arg}); err != nil {
		c.finish(call.id, "", fmt.Errorf("client %s: send %s: %w", c.name, op, err))
	}
	return call
}

// Done is closed when the call has returned.
func (call *Call) Done() <-chan struct{} { return call.done }

// Result waits for the call and returns its result and error. The scene's
// deadline fails the test, and so does a Lock of the learner's lock that
// has not returned within its bound ([Scene.lockBound]).
func (call *Call) Result() (string, error) {
	var late <-chan time.Time
	bound, bounded := call.lockBound()
	if bounded {
		t := time.NewTimer(bound)
		defer t.Stop()
		late = t.C
	}
	select {
	case <-call.done:
		return call.out, call.err
	case <-late:
		call.lockLate(bound)
		return "", nil
	case <-call.c.s.Ctx.Done():
		call.c.s.Fatalf("labs: client %s: %s did not return before the scene's deadline (%v): does it ignore its context?", call.c.name, call.op, call.c.s.timeout)
		return "", nil
	}
}

// lockBound is how long the scenario waits for the call when it is a Lock
// of the learner's lock (see [Scene.lockBound]); bounded is false for any
// other call.
func (call *Call) lockBound() (bound time.Duration, bounded bool) {
	if call.op != "lock" || !call.c.s.exercise {
		return 0, false
	}
	var wait time.Duration
	if call.arg != "" {
		d, err := time.ParseDuration(call.arg)
		if err != nil {
			return 0, false // the client refuses the argument and answers at once
		}
		wait = d
	}
	return call.c.s.lockBound(wait), true
}

// lockLate fails the test for a Lock of the learner's lock that has not
// returned within bound.
func (call *Call) lockLate(bound time.Duration) {
	call.c.s.t.Helper()
	s := call.c.s
	store := s.Store
	if store == "" {
		store = defaultStore
	}
	s.Fatalf("labs: client %s: Lock did not return within %v (does it ignore its context / wait on something not in %s?): a Lock returns when it takes the lock, at the latest once every lease in the scene (the longest is %v) has run out, or when its context ends", call.c.name, bound, store, s.lease())
}

// Within waits at most d for the call and reports whether it returned:
// for a call that must not block (a TryLock), so that one that does is
// named on the timeline instead of running into the scene's deadline.
func (call *Call) Within(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-call.done:
		return true
	case <-t.C:
		return false
	case <-call.c.s.Ctx.Done():
		return false
	}
}

// Err waits for the call and returns its error.
func (call *Call) Err() error {
	_, err := call.Result()
	return err
}

// Cancel cancels the call's context in the client.
func (call *Call) Cancel() { _ = call.c.out.send(msg{T: "cancel", ID: call.id}) }

// Do runs op with arg and waits for it.
func (c *Client) Do(op, arg string) (string, error) { return c.Go(op, arg).Result() }

// Lock runs the lock's Lock in the client; it is recorded on the timeline.
func (c *Client) Lock() error { return c.Go("lock", "").Err() }

// LockWithin runs the lock's Lock with a context that ends after d: how
// long this client is willing to wait.
func (c *Client) LockWithin(d time.Duration) error { return c.Go("lock", d.String()).Err() }

// answerTimeout bounds a TryLock or an Unlock, which answer without
// waiting for the lock: one that takes longer (a learner's TryLock that
// waits, an Unlock blocked on something) fails the test at once, with the
// timeline so far, instead of at the scene's deadline.
const answerTimeout = 15 * time.Second

// TryLock runs the lock's TryLock in the client.
func (c *Client) TryLock() (bool, error) {
	out, err := c.answer("trylock")
	return out == "true", err
}

// Unlock runs the lock's Unlock in the client.
func (c *Client) Unlock() error {
	_, err := c.answer("unlock")
	return err
}

// answer runs op, which must return within answerTimeout.
func (c *Client) answer(op string) (string, error) {
	c.s.t.Helper()
	call := c.Go(op, "")
	if !call.Within(answerTimeout) {
		c.s.Fatalf("labs: client %s: its %s has not returned after %v: it must answer without waiting for the lock", c.name, op, answerTimeout)
	}
	return call.Result()
}

// Release runs the lock's Unlock in the client and reports whether it
// released the lock. "Not held" ([NotHeld]) is an answer, shown on the
// client's lane, not a failure: a client whose lease ran out learns it
// here. Any other error fails the test.
func (c *Client) Release() bool {
	c.s.t.Helper()
	err := c.Unlock()
	if err != nil && !NotHeld(err) {
		c.s.Must(err)
	}
	return err == nil
}

// ReleaseAfterFault runs the lock's Unlock in a client whose servers may be
// dead, cut off or promoted: every failure is an answer, shown on the
// client's lane. Only a client that died fails the test.
func (c *Client) ReleaseAfterFault() {
	c.s.t.Helper()
	if err := c.Unlock(); IsGone(err) {
		c.s.Must(err)
	}
}

// MustDo runs op with arg (see [Client.Do]) and returns its result; an
// error fails the test.
func (c *Client) MustDo(op, arg string) string {
	c.s.t.Helper()
	out, err := c.Do(op, arg)
	c.s.Must(err)
	return out
}

// Enter records that the client entered the critical section.
func (c *Client) Enter() { c.s.Must(c.Go("enter", "").Err()) }

// Exit records that the client left the critical section.
func (c *Client) Exit() { c.s.Must(c.Go("exit", "").Err()) }

// Write records an accepted write of data to the (unchecked) protected
// resource, with the lock's tokens.
func (c *Client) Write(data string) { c.s.Must(c.Go("write", data).Err()) }

// Note puts text in the client's lane, recorded by the client itself (so a
// frozen client's note appears when it thaws).
func (c *Client) Note(text string) { c.s.Must(c.Go("note", text).Err()) }

// ParkAt arms hook points: the next time the client's lock reaches one of
// them, the client parks there until [Client.Continue]. Arming points that
// only some locks have lets one script drive them all (see
// [Client.WaitParkedOr]).
//
// ParkAt returns once the client has armed the points, so it may arm a
// client whose lock call is already running: the next hook it reaches
// parks it. (A frozen client cannot answer: arm it before freezing it.)
func (c *Client) ParkAt(points ...string) {
	c.s.t.Helper()
	for _, p := range points {
		c.arm(msg{T: "arm", Op: p})
	}
}

// HoldAt is ParkAt without the "⏸" note on the timeline: for a park whose
// only purpose is to order what the timeline shows (say, to hold a client
// that was handed the lock until the releaser's Unlock has returned).
func (c *Client) HoldAt(points ...string) {
	c.s.t.Helper()
	for _, p := range points {
		c.arm(msg{T: "arm", Op: p, Arg: "silent"})
	}
}

// crashInPlace ends a goroutine client as a crash of its process would,
// without a process: its Redis connections close, and then an operation
// parked at a hook point goes on, failing at its next command, so nothing
// it was about to send reaches Redis. The client does nothing useful
// after. (For a real process, use [Client.Kill].)
func (c *Client) crashInPlace() {
	c.s.t.Helper()
	c.arm(msg{T: "crash"})
}

// disarm undoes [Client.ParkAt] and [Client.HoldAt] for points not yet
// reached: the client passes them without parking.
func (c *Client) disarm(points ...string) {
	c.s.t.Helper()
	for _, p := range points {
		c.arm(msg{T: "arm", Op: p, Arg: "off"})
	}
}

// arm sends one arm message and waits for the client to acknowledge it.
func (c *Client) arm(m msg) {
	c.s.t.Helper()
	c.s.Must(c.out.send(m))
	select {
	case <-c.armed:
	case <-c.gone:
		c.s.Fatalf("labs: client %s exited before arming %s%s", c.name, m.Op, c.stderrTail())
	case <-c.s.Ctx.Done():
		c.s.Fatalf("labs: client %s did not arm %s before the scene's deadline", c.name, m.Op)
	}
}

// WaitParked waits until the client is parked at one of points and returns
// it. It fails the test if the client dies or the scene's deadline passes
// first.
func (c *Client) WaitParked(points ...string) string {
	c.s.t.Helper()
	p, ok := c.WaitParkedOr(nil, points...)
	if !ok {
		c.s.Fatalf("labs: client %s finished instead of parking at %v", c.name, points)
	}
	return p
}

// WaitParkedOr waits until the client is parked at one of points (it
// returns the point and true) or call returns first (false), for scripts
// that run against locks with and without those points. call may be nil.
func (c *Client) WaitParkedOr(call *Call, points ...string) (string, bool) {
	c.s.t.Helper()
	var done <-chan struct{}
	var late <-chan time.Time
	var bound time.Duration
	if call != nil {
		done = call.done
		var bounded bool
		if bound, bounded = call.lockBound(); bounded {
			t := time.NewTimer(bound)
			defer t.Stop()
			late = t.C
		}
	}
	for {
		c.mu.Lock()
		parked, ch := c.parked, c.parkedC
		c.mu.Unlock()
		if parked != "" && slices.Contains(points, parked) {
			return parked, true
		}
		select {
		case <-ch:
		case <-done:
			return "", false
		case <-late:
			call.lockLate(bound)
			return "", false
		case <-c.gone:
			c.s.Fatalf("labs: client %s exited while waiting for it to park at %v%s", c.name, points, c.stderrTail())
		case <-c.s.Ctx.Done():
			c.s.Fatalf("labs: client %s did not park at %v before the scene's deadline", c.name, points)
		}
	}
}

// Continue lets a parked client go on.
func (c *Client) Continue() {
	c.mu.Lock()
	c.parked = ""
	c.mu.Unlock()
	c.s.Must(c.out.send(msg{T: "continue"}))
}

// pid returns the child process's id; it fails the test for a goroutine
// client.
func (c *Client) pid() int {
	c.s.t.Helper()
	if c.cmd == nil {
		c.s.t.Fatalf("labs: client %s runs in a goroutine; use Scene.Process for a real process", c.name)
	}
	return c.cmd.Process.Pid
}

// Kill crashes the client's process with SIGKILL, as a power cut or an OOM
// kill would, and waits until it is gone. Calls in flight fail.
func (c *Client) Kill() {
	c.s.t.Helper()
	pid := c.pid()
	c.mu.Lock()
	c.killed = true
	c.mu.Unlock()
	c.s.Must(proc.Signal(c.cmd, syscall.SIGKILL))
	c.s.Fault("kill -9 %s (pid %d)", c.name, pid)
	<-c.gone
	c.wait()
}

// Freeze stops the client's process with SIGSTOP, as a long GC pause or a
// stalled VM does, and returns once the kernel reports it stopped. Its
// connections stay open; the wall clock, and Redis TTLs, keep running.
func (c *Client) Freeze() {
	c.s.t.Helper()
	pid := c.pid()
	c.s.Must(proc.Signal(c.cmd, syscall.SIGSTOP))
	c.s.Must(proc.WaitState(pid, "T", 5*time.Second))
	c.s.Fault("SIGSTOP %s (frozen)", c.name)
}

// Thaw resumes a frozen client's process with SIGCONT.
func (c *Client) Thaw() {
	c.s.t.Helper()
	c.pid()
	c.s.Fault("SIGCONT %s (resumes)", c.name)
	c.s.Must(proc.Signal(c.cmd, syscall.SIGCONT))
}

// read handles the client's messages until its stream ends.
func (c *Client) read(r io.Reader) {
	defer close(c.gone)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var m msg
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			continue
		}
		switch m.T {
		case "event":
			if m.Event != nil {
				m.Event.Client = c.name
				c.s.hist.Add(*m.Event)
			}
		case "armed":
			c.armed <- struct{}{}
		case "parked":
			c.mu.Lock()
			c.parked = m.Op
			close(c.parkedC)
			c.parkedC = make(chan struct{})
			c.mu.Unlock()
		case "done":
			var err error
			if m.Err != "" {
				err = &remoteError{msg: m.Err, labels: m.Labels}
			}
			c.finish(m.ID, m.Out, err)
		}
	}
	c.mu.Lock()
	ids := make([]int, 0, len(c.calls))
	for id := range c.calls {
		ids = append(ids, id)
	}
	why := "exited"
	if c.killed {
		why = "was killed"
	}
	c.mu.Unlock()
	for _, id := range ids {
		c.finish(id, "", fmt.Errorf("client %s %s: %w", c.name, why, errClientGone))
	}
}

func (c *Client) finish(id int, out string, err error) {
	c.mu.Lock()
	call, ok := c.calls[id]
	delete(c.calls, id)
	c.mu.Unlock()
	if !ok {
		return
	}
	call.out, call.err = out, err
	close(call.done)
}

// close stops the client and waits for it: closing its input ends a
// goroutine client at once and makes a child process exit; a child that
// does not (it is frozen, say) is killed.
func (c *Client) close() {
	_ = c.in.Close()
	if c.cmd == nil {
		select {
		case <-c.gone:
		case <-time.After(stopTimeout):
			// An operation that ignores its context (a lock blocked on
			// something else) cannot be stopped: leave it, and say so.
			c.s.t.Errorf("labs: client %s did not stop within %v of the test's end: an operation of its lock still runs and ignores its context", c.name, stopTimeout)
		}
		return
	}
	_ = proc.Signal(c.cmd, syscall.SIGCONT)
	select {
	case <-c.gone:
	case <-time.After(stopTimeout):
		_ = proc.Signal(c.cmd, syscall.SIGKILL)
	}
	c.wait()
}

// stopTimeout bounds how long a client has to stop when its test ends.
const stopTimeout = 5 * time.Second

// wait reaps the child process once.
func (c *Client) wait() { c.waitOnce.Do(func() { _ = c.cmd.Wait() }) }

// raceExitEnv keeps a race-enabled child from sleeping a second before it
// exits (the race detector's atexit_sleep_ms defaults to 1000).
func raceExitEnv() string {
	return "GORACE=" + strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0")
}

func (c *Client) stderrTail() string {
	if c.stderr == nil || c.stderr.Len() == 0 {
		return ""
	}
	return "\nstderr of " + c.name + ":\n" + c.stderr.String()
}

// lockedBuffer is a bytes.Buffer safe for the writer goroutine of
// exec.Cmd and a reader.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Len()
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startGoroutine runs a client in a goroutine over in-memory pipes.
func (s *Scene) startGoroutine(spec childSpec) *Client {
	toClient, fromDriver := io.Pipe()
	toDriver, fromClient := io.Pipe()
	c := s.newClient(spec.Env.Client, fromDriver)
	go func() {
		_ = serve(spec, toClient, fromClient, true)
		_ = fromClient.Close()
		_ = toClient.Close()
	}()
	go c.read(toDriver)
	return c
}

// startProcess runs a client in a child process: this test binary again,
// which [Main] turns into a client serving fds 3 and 4.
func (s *Scene) startProcess(spec childSpec) *Client {
	specJSON, err := json.Marshal(spec)
	s.Must(err)
	childIn, fromDriver, err := os.Pipe()
	s.Must(err)
	toDriver, childOut, err := os.Pipe()
	s.Must(err)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(specJSON), raceExitEnv())
	cmd.ExtraFiles = []*os.File{childIn, childOut}
	stderr := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = stderr, stderr
	err = proc.Start(cmd)
	childIn.Close()
	childOut.Close()
	if err != nil {
		fromDriver.Close()
		toDriver.Close()
		s.t.Fatalf("labs: start client process %s: %v", spec.Env.Client, err)
	}
	c := s.newClient(spec.Env.Client, fromDriver)
	c.cmd, c.stderr = cmd, stderr
	go c.read(toDriver)
	return c
}

func (s *Scene) newClient(name string, toClient io.WriteCloser) *Client {
	return &Client{
		s: s, name: name,
		out:     &encoder{enc: json.NewEncoder(toClient)},
		in:      toClient,
		gone:    make(chan struct{}),
		calls:   map[int]*Call{},
		parkedC: make(chan struct{}),
		armed:   make(chan struct{}, 1),
	}
}
