package rig

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/locklab/locklab/internal/proc"
)

// daemon is one server process other than redis-server (an etcd member,
// ZooKeeper's JVM, PostgreSQL's postmaster) that the rig starts, signals,
// restarts and reaps. It runs in its own process group with SIGKILL as its
// parent-death signal (package proc), so it dies with the test binary, and
// the rig is its parent, so it is reaped when it exits (this matters where
// PID 1 reaps no orphans: a zombie postmaster keeps its PID in
// postmaster.pid and blocks the next start). Its process title starts with
// argv0 when set, so [SystemStrays] can find it.
type daemon struct {
	what    string         // for messages: "etcd member m0"
	path    string         // the binary
	argv0   string         // first word of the process title; "" means path
	args    []string       // arguments after argv[0]
	dir     string         // working directory
	logPath string         // stdout and stderr, appended across restarts
	env     []string       // nil: this process's environment
	user    *[2]uint32     // uid, gid to run as; nil: this process's
	stopSig syscall.Signal // graceful stop, sent to the leader only
	// redis marks a redis-server: its reaper goroutine, [reapRedis], is
	// one package leakcheck allows to outlive a test (a package's shared
	// servers run until TestMain ends).
	redis bool

	mu     sync.Mutex // protects cmd and exited
	cmd    *exec.Cmd
	exited chan struct{} // closed once cmd has been reaped
}

// start starts the process; it does not wait for it to be ready.
func (d *daemon) start() error {
	if d.running() {
		return fmt.Errorf("rig: %s is already running", d.what)
	}
	logf, err := os.OpenFile(d.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("rig: %w", err)
	}
	fmt.Fprintf(logf, "--- rig: starting %s at %s\n", d.what, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(d.path, d.args...)
	if d.argv0 != "" {
		cmd.Args[0] = d.argv0
	}
	cmd.Dir, cmd.Env = d.dir, d.env
	cmd.Stdout, cmd.Stderr = logf, logf
	if d.user != nil {
		err = proc.StartAs(cmd, d.user[0], d.user[1])
	} else {
		err = proc.Start(cmd)
	}
	if err != nil {
		logf.Close()
		return fmt.Errorf("rig: start %s (%s): %w", d.what, d.path, err)
	}
	exited := make(chan struct{})
	if d.redis {
		go reapRedis(cmd, logf, exited)
	} else {
		go reap(cmd, logf, exited)
	}
	d.mu.Lock()
	d.cmd, d.exited = cmd, exited
	d.mu.Unlock()
	return nil
}

// reap waits for cmd to exit (which reaps it), closes its log and then
// exited.
func reap(cmd *exec.Cmd, logf *os.File, exited chan struct{}) {
	_ = cmd.Wait()
	logf.Close()
	close(exited)
}

// reapRedis is reap for a redis-server, under the name leakcheck allows.
func reapRedis(cmd *exec.Cmd, logf *os.File, exited chan struct{}) { reap(cmd, logf, exited) }

func (d *daemon) current() (*exec.Cmd, chan struct{}) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cmd, d.exited
}

// running reports whether the process was started and has not exited.
func (d *daemon) running() bool {
	cmd, exited := d.current()
	if cmd == nil {
		return false
	}
	select {
	case <-exited:
		return false
	default:
		return true
	}
}

// done returns a channel closed when the current process has exited (an
// already closed one when none runs).
func (d *daemon) done() <-chan struct{} {
	_, exited := d.current()
	if exited == nil {
		c := make(chan struct{})
		close(c)
		return c
	}
	return exited
}

func (d *daemon) pid() int {
	cmd, _ := d.current()
	if cmd == nil || !d.running() {
		return 0
	}
	return cmd.Process.Pid
}

// kill sends SIGCONT (so a paused process dies too) and SIGKILL to the
// whole process group, and waits until the process has been reaped.
func (d *daemon) kill() error {
	cmd, exited := d.current()
	if cmd == nil {
		return nil
	}
	_ = proc.Signal(cmd, syscall.SIGCONT)
	_ = proc.Signal(cmd, syscall.SIGKILL)
	<-exited
	return nil
}

// stop asks the process to shut down (stopSig, or SIGTERM) and waits up to
// timeout, then kills it.
func (d *daemon) stop(timeout time.Duration) error {
	cmd, exited := d.current()
	if cmd == nil || !d.running() {
		return nil
	}
	sig := d.stopSig
	if sig == 0 {
		sig = syscall.SIGTERM
	}
	_ = proc.Signal(cmd, syscall.SIGCONT)
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("rig: stop %s: %w", d.what, err)
	}
	select {
	case <-exited:
		return nil
	case <-time.After(timeout):
		_ = d.kill()
		return fmt.Errorf("rig: %s ignored %v for %v; killed", d.what, sig, timeout)
	}
}

// pause freezes the whole process group (SIGSTOP) and returns once the
// kernel reports the leader stopped.
func (d *daemon) pause() error {
	cmd, _ := d.current()
	if !d.running() {
		return fmt.Errorf("rig: pause: %s is not running", d.what)
	}
	if err := proc.Signal(cmd, syscall.SIGSTOP); err != nil {
		return err
	}
	return proc.WaitState(cmd.Process.Pid, "T", 5*time.Second)
}

// resume continues a paused process group (SIGCONT).
func (d *daemon) resume() error {
	cmd, _ := d.current()
	if !d.running() {
		return fmt.Errorf("rig: resume: %s is not running", d.what)
	}
	return proc.Signal(cmd, syscall.SIGCONT)
}

func (d *daemon) logTail(lines int) string {
	b, err := os.ReadFile(d.logPath)
	if err != nil {
		return ""
	}
	return tail(b, lines)
}

// waitReady polls probe every pollEvery until it returns nil. It fails at
// once, with the log's tail, if the process exits, and after timeout (or
// when ctx ends) with probe's last error.
func (d *daemon) waitReady(ctx context.Context, timeout time.Duration, probe func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	exited := d.done()
	for {
		select {
		case <-exited:
			return fmt.Errorf("rig: %s exited at start; log:\n%s", d.what, d.logTail(30))
		default:
		}
		err := probe(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("rig: %s not ready after %v: %w; log:\n%s", d.what, timeout, err, d.logTail(30))
		case <-exited:
			return fmt.Errorf("rig: %s exited at start; log:\n%s", d.what, d.logTail(30))
		case <-time.After(pollEvery):
		}
	}
}

// restart kills the process if it runs, starts it again with start
// (d.start, or a launch that sets its arguments first) and waits until
// probe passes, as waitReady does.
func (d *daemon) restart(ctx context.Context, start func() error, timeout time.Duration, probe func(context.Context) error) error {
	if err := d.kill(); err != nil {
		return err
	}
	if err := start(); err != nil {
		return err
	}
	return d.waitReady(ctx, timeout, probe)
}

// waitPing waits until the Redis server or sentinel d runs answers PING at
// addr, then returns ours(ctx): nil when the process that answers is the
// one d started, an error wrapping errAddrInUse when another process has
// the port (other errors: not known yet, ask again). It fails with an error
// wrapping errAddrInUse if the process exits saying its port is taken,
// with the log's tail if it exits otherwise, and when ctx ends.
func (d *daemon) waitPing(ctx context.Context, addr string, ours func(ctx context.Context) error) error {
	probe := &Node{addr: addr}
	exited := d.done()
	for {
		select {
		case <-exited:
			log := d.logTail(20)
			if strings.Contains(log, "Address already in use") {
				return fmt.Errorf("rig: %s: %w", d.what, errAddrInUse)
			}
			return fmt.Errorf("rig: %s exited at start; log:\n%s", d.what, log)
		default:
		}
		if probe.Ping(200*time.Millisecond) == nil {
			err := ours(ctx)
			if err == nil || errors.Is(err, errAddrInUse) {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("rig: %s not answering: %w; log:\n%s", d.what, ctx.Err(), d.logTail(20))
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// closer closes a group of servers that live under one temporary
// directory (an etcd cluster, a ZooKeeper ensemble, a PostgreSQL server):
// the first close kills every process at once, waits for them all, then
// removes the directory and returns what that returned; later ones do
// nothing and return nil.
type closer struct {
	once sync.Once
}

func (c *closer) close(dir string, kills ...func() error) error {
	var err error
	c.once.Do(func() {
		var wg sync.WaitGroup
		for _, kill := range kills {
			wg.Go(func() { _ = kill() })
		}
		wg.Wait()
		err = os.RemoveAll(dir)
	})
	return err
}

// serverProcess gives a server that runs as one daemon (an etcd member, a
// ZooKeeper server, a PostgreSQL server) the process faults and accessors
// they all have.
type serverProcess struct{ d *daemon }

// Kill sends SIGKILL to the server (its whole process group) and waits
// until it has exited. Its data directory stays, for Restart.
func (p serverProcess) Kill() error { return p.d.kill() }

// Pause freezes the server (SIGSTOP to its process group) and returns once
// the kernel reports it stopped: it answers nobody, neither clients nor
// its peers, until Resume.
func (p serverProcess) Pause() error { return p.d.pause() }

// Resume continues a paused server (SIGCONT).
func (p serverProcess) Resume() error { return p.d.resume() }

// Running reports whether the server's process is running (paused counts).
func (p serverProcess) Running() bool { return p.d.running() }

// Pid returns the server's process id (a PostgreSQL server's postmaster),
// or 0 when it is not running.
func (p serverProcess) Pid() int { return p.d.pid() }

// LogTail returns the last lines of the server's log.
func (p serverProcess) LogTail(lines int) string { return p.d.logTail(lines) }

// daemonGroup is the servers of one etcd cluster or ZooKeeper ensemble:
// their daemons and client addresses, in the order the servers were made,
// and the temporary directory they all live under.
type daemonGroup struct {
	dir     string
	daemons []*daemon
	addrs   []string // addrs[i] is the client address of daemons[i]
	closer
}

// add adds a server: its daemon and its client address.
func (g *daemonGroup) add(d *daemon, addr string) {
	g.daemons = append(g.daemons, d)
	g.addrs = append(g.addrs, addr)
}

// clientAddrs returns a copy of every server's client address.
func (g *daemonGroup) clientAddrs() []string { return append([]string(nil), g.addrs...) }

// boot starts the group: start for each server in turn (i indexes
// daemons), then ready, which waits until the group serves. On the first
// error it closes the group (closeAll) and returns that error.
func (g *daemonGroup) boot(start func(i int) error, ready func() error) error {
	for i := range g.daemons {
		if err := start(i); err != nil {
			_ = g.closeAll()
			return err
		}
	}
	if err := ready(); err != nil {
		_ = g.closeAll()
		return err
	}
	return nil
}

// closeAll kills every daemon of the group, waits for them and removes the
// directory, once (see closer).
func (g *daemonGroup) closeAll() error {
	kills := make([]func() error, len(g.daemons))
	for i, d := range g.daemons {
		kills[i] = d.kill
	}
	return g.close(g.dir, kills...)
}

// logTails is the last lines of each daemon's log, each under a line
// naming the daemon (its what), for closeAtEnd.
func (g *daemonGroup) logTails(lines int) string {
	var b strings.Builder
	for _, d := range g.daemons {
		fmt.Fprintf(&b, "%s log, last lines:\n%s\n", d.what, d.logTail(lines))
	}
	return b.String()
}

// startRetried calls start, and again (three calls at most) while it fails
// with an error whose text holds inUse: another test binary may take a
// free port between freePort and the server binding it, and a new start
// picks new ports. It returns what the last call returned.
func startRetried[S any](inUse string, start func() (S, error)) (S, error) {
	for attempt := 0; ; attempt++ {
		s, err := start()
		if err == nil || attempt == 2 || !strings.Contains(err.Error(), inUse) {
			return s, err
		}
	}
}

// startForTest is a StartXxx: it calls start and fails the test with its
// error, or closes what it started when tb ends (see closeAtEnd).
func startForTest[S tailer](tb testing.TB, start func() (S, error)) S {
	tb.Helper()
	s, err := start()
	if err != nil {
		tb.Fatal(err)
	}
	closeAtEnd(tb, s)
	return s
}

// tailer is a group of servers a test started: what closeAtEnd needs.
type tailer interface {
	Close() error
	// logTails is the last lines of each server's log, each under a line
	// naming the server.
	logTails(lines int) string
}

// closeAtEnd closes s when tb ends; when the test failed, it first logs
// the last 20 lines of each server's log.
func closeAtEnd(tb testing.TB, s tailer) {
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Log(s.logTails(20))
		}
		_ = s.Close()
	})
}

// pollEvery is how often readiness and state checks poll a server.
const pollEvery = 10 * time.Millisecond
