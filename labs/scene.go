package labs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/history"
	"github.com/locklab/locklab/internal/rig"
)

const (
	// checkTimeout caps one scene, as 6.5840's checkTimeout caps a test:
	// a lab that hangs fails instead of eating CI's time.
	checkTimeout = 60 * time.Second
	// defaultKey is the key under test: fixed, so timelines read the same
	// every run (each scene has its own servers).
	defaultKey = "lock:order:1001"
	// defaultTTL is the lock TTL a scene hands to its clients.
	defaultTTL = 2 * time.Second
)

// Scenario is a lab's script, run against one lock recipe.
type Scenario func(s *Scene, impl *Impl)

// Scene is one run of a scenario: servers, clients, one history. Key, TTL
// and Params are handed to clients created after they are set.
type Scene struct {
	Ctx    context.Context // ends at the scene's deadline (checkTimeout)
	Key    string          // the lock's key, "lock:order:1001" unless set
	TTL    time.Duration   // the lock TTL clients get, 2s unless set
	Params map[string]string

	t        testing.TB
	hist     *history.History
	nodes    []*rig.Node
	observer *redis.Client
	clients  int
}

func newScene(t testing.TB) *Scene {
	ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
	t.Cleanup(cancel)
	return &Scene{
		Ctx:    ctx,
		Key:    defaultKey,
		TTL:    defaultTTL,
		Params: map[string]string{},
		t:      t,
		hist:   history.New(history.NewClock()),
	}
}

// T returns the test the scene runs in.
func (s *Scene) T() testing.TB { return s.t }

// Must fails the test if err is not nil.
func (s *Scene) Must(err error) {
	s.t.Helper()
	if err != nil {
		s.t.Fatalf("labs: %v", err)
	}
}

// Nodes starts n independent redis-server nodes the first time it is
// called and returns them; later calls return the same nodes. Clients talk
// to every node, in order (see [Env.Redis]).
func (s *Scene) Nodes(n int, opts ...rig.Option) []*rig.Node {
	s.t.Helper()
	if s.nodes == nil {
		s.nodes = rig.StartN(s.t, n, opts...)
	}
	if n > len(s.nodes) {
		s.t.Fatalf("labs: Nodes(%d) after the scene started %d", n, len(s.nodes))
	}
	return s.nodes
}

// RequireControl skips the test, saying why, when the servers come from
// LOCKLAB_REDIS_ADDRS (external): a scenario that kills, pauses, restarts
// or promotes servers calls it first. It never skips for want of Redis.
func (s *Scene) RequireControl() {
	s.t.Helper()
	rig.RequireControl(s.t)
}

// Node starts one node (see [Scene.Nodes]) and returns the first.
func (s *Scene) Node() *rig.Node {
	s.t.Helper()
	return s.Nodes(1)[0]
}

// Redis returns the harness's own client to the first node, for looking at
// the key ("what does Redis say now?"). It is not a lab client: what it
// does is not on the timeline.
func (s *Scene) Redis() *redis.Client {
	s.t.Helper()
	if s.observer == nil {
		s.observer = s.Node().Client()
	}
	return s.observer
}

// ClientOption adjusts one client's environment.
type ClientOption func(*Env)

// Addrs points a client at these servers instead of the scene's nodes, for
// example at a promoted replica or a fault proxy.
func Addrs(addrs ...string) ClientOption { return func(e *Env) { e.Addrs = addrs } }

// Param sets one parameter for one client (see [Env.Param]).
func Param(name, value string) ClientOption {
	return func(e *Env) { e.Params[name] = value }
}

func (s *Scene) env(name string, opts []ClientOption) *Env {
	e := &Env{Client: name, Key: s.Key, TTL: s.TTL, Params: map[string]string{}}
	for k, v := range s.Params {
		e.Params[k] = v
	}
	for _, o := range opts {
		o(e)
	}
	if e.Addrs == nil {
		for _, n := range s.Nodes(1) {
			e.Addrs = append(e.Addrs, n.Addr())
		}
	}
	return e
}

// Client starts a client named name (one letter reads best on the
// timeline) in a goroutine of this process.
func (s *Scene) Client(name string, impl *Impl, opts ...ClientOption) *Client {
	s.t.Helper()
	c := s.startGoroutine(childSpec{Impl: impl.Name, Env: s.env(name, opts), ClockBase: s.hist.Clock().Base()})
	s.clients++
	s.t.Cleanup(c.close)
	return c
}

// Process starts a client named name in a child process, so the scenario
// can crash it for real ([Client.Kill]) or freeze it ([Client.Freeze]).
func (s *Scene) Process(name string, impl *Impl, opts ...ClientOption) *Client {
	s.t.Helper()
	c := s.startProcess(childSpec{Impl: impl.Name, Env: s.env(name, opts), ClockBase: s.hist.Clock().Base()})
	s.clients++
	s.t.Cleanup(c.close)
	return c
}

// Local returns a client to use directly from the test's goroutines (a
// stress loop), recording into the scene's history. It has no step
// control.
func (s *Scene) Local(name string, impl *Impl, opts ...ClientOption) *Local {
	s.t.Helper()
	l := newLocal(s.env(name, opts), impl, s.hist.Clock(), s.hist.Add, func(string) {})
	s.clients++
	s.t.Cleanup(l.Close)
	return l
}

// Fault records a fault on the timeline: something done to the system.
func (s *Scene) Fault(format string, args ...any) { s.hist.Faultf(format, args...) }

// Note records a line in the faults lane: something the harness observed.
func (s *Scene) Note(format string, args ...any) {
	s.hist.Add(history.Event{Kind: history.Note, Text: fmt.Sprintf(format, args...)})
}

// Violation records a violation the scenario found itself, named in one
// sentence, for failures no checker sees (a lock that never frees).
func (s *Scene) Violation(format string, args ...any) {
	s.hist.Add(history.Event{Kind: history.Violation, Text: fmt.Sprintf(format, args...)})
}

// Events returns the history so far, ordered.
func (s *Scene) Events() []history.Event { return s.hist.Events() }

// Eventually polls cond every millisecond until it holds. An error from
// cond, or the scene's deadline, fails the test naming what.
func (s *Scene) Eventually(what string, cond func() (bool, error)) {
	s.t.Helper()
	for {
		ok, err := cond()
		if err != nil {
			s.t.Fatalf("labs: waiting until %s: %v", what, err)
		}
		if ok {
			return
		}
		select {
		case <-s.Ctx.Done():
			s.t.Fatalf("labs: timed out waiting until %s", what)
		case <-time.After(time.Millisecond):
		}
	}
}

// WaitExpired waits until key is gone from the first node and records that
// its TTL ran out.
func (s *Scene) WaitExpired(key string) {
	s.t.Helper()
	s.Eventually(key+" is gone", func() (bool, error) {
		n, err := s.Redis().Exists(s.Ctx, key).Result()
		return n == 0, err
	})
	s.Fault("%s expired", key)
}

// outcome is what a run must show.
type outcome int

const (
	wantViolation outcome = iota
	wantSafe
)

// Broken runs sc against a broken lock and passes only if the history
// shows a violation; it logs the timeline and checks it against the golden
// file. A run with no violation fails: the harness went blind. With
// LOCKLAB_RED=1 (make red) it demands safety instead, to show the broken
// lock failing as a red test.
func Broken(t *testing.T, title string, sc Scenario, impl *Impl) {
	t.Helper()
	if os.Getenv("LOCKLAB_RED") != "" {
		run(t, title, "broken, run as if it were correct (make red)", sc, impl, wantSafe, false)
		return
	}
	run(t, title, "broken", sc, impl, wantViolation, true)
}

// Fixed runs sc against a correct lock and passes only if the history
// shows no violation; it logs the timeline and checks the golden file.
func Fixed(t *testing.T, title string, sc Scenario, impl *Impl) {
	t.Helper()
	run(t, title, "fixed", sc, impl, wantSafe, true)
}

// Exercise runs sc against the learner's exercise. Built with -tags
// exercise it demands safety: red until the exercise is fixed. Otherwise it
// proves an untouched exercise.go is caught (so every exercise starts red)
// and skips once exercise.go has been edited.
func Exercise(t *testing.T, title string, sc Scenario, impl *Impl) {
	t.Helper()
	if exerciseMode {
		run(t, title, "exercise", sc, impl, wantSafe, false)
		return
	}
	if !exercisePristine(t) {
		t.Skipf("exercise.go has been edited: test your fix with `make exercise LAB=%s` (go test -tags exercise)", labNumber())
	}
	run(t, title, "exercise, untouched: must be caught", sc, impl, wantViolation, false)
}

func run(t *testing.T, title, label string, sc Scenario, impl *Impl, want outcome, golden bool) {
	t.Helper()
	start := time.Now()
	s := newScene(t)
	sc(s, impl)
	events := s.hist.Events()
	findings := history.Check(events)
	timeline := history.Render(events, findings)
	stats := fmt.Sprintf("%4.1fs  %d clients  %d events", time.Since(start).Seconds(), s.clients, len(events))
	head := title + " " + label + ": "
	switch want {
	case wantViolation:
		if len(findings) == 0 {
			fmt.Printf("%sno violation ... FAIL  %s\n", head, stats)
			t.Fatalf("%sharness went blind: the broken lock showed no violation, so this run proves nothing\n%s", head, timeline)
		}
		head += "violation reproduced"
	case wantSafe:
		if len(findings) > 0 {
			fmt.Printf("%s%s ... FAIL  %s\n", head, plural(len(findings), "violation"), stats)
			t.Fatalf("%s%s\n%s", head, plural(len(findings), "violation"), timeline)
		}
		head += "no violation"
	}
	fmt.Printf("%s ... ok  %s\n", head, stats)
	t.Logf("%s\n%s", head, timeline)
	if golden {
		checkGolden(t, head+"\n"+timeline)
	}
}

// Run runs sc against impl with no expectation, banner or golden file and
// returns the history and what the checkers found, for tests of the
// harness and for labs that measure rather than judge.
func Run(t *testing.T, sc Scenario, impl *Impl) ([]history.Event, []history.Finding) {
	t.Helper()
	s := newScene(t)
	sc(s, impl)
	events := s.hist.Events()
	return events, history.Check(events)
}

// labNumber is the NN of the lab directory the test runs in (labs/NN-topic).
func labNumber() string {
	dir, err := os.Getwd()
	if err != nil {
		return "NN"
	}
	n, _, ok := strings.Cut(filepath.Base(dir), "-")
	if !ok {
		return "NN"
	}
	return n
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// IsGone reports whether err is a call cut off because its client was
// killed or exited.
func IsGone(err error) bool { return errors.Is(err, errClientGone) }
