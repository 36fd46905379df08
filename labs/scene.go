package labs

import (
	"context"
	"fmt"
	"sync/atomic"
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
	// exerciseTimeout caps one scene run on a learner's exercise: every
	// exercise scenario takes seconds, and a fix that hangs (a lock that
	// never returns) should say so soon.
	exerciseTimeout = 30 * time.Second
	// defaultKey is the key under test: fixed, so timelines read the same
	// every run (each scene has its own servers).
	defaultKey = "lock:order:1001"
	// defaultTTL is the lock TTL a scene hands to its clients.
	defaultTTL = 2 * time.Second
	// defaultStore is where a scene's locks keep their holds, unless the
	// scenario says otherwise (Scene.Store).
	defaultStore = "Redis"
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
	// Store names where the lock under test keeps its holds, as the
	// harness's messages say it ("Redis" unless set; lab 13: "etcd").
	Store string

	t        testing.TB
	hist     *history.History
	nodes    []*rig.Node
	observer *redis.Client
	clients  int
	timeout  time.Duration // the scene's deadline: checkTimeout, or exerciseTimeout
	spread   bool          // exercise runs: clients spread commands over their connections
	// exercise marks a run on the learner's exercise: a failure leaves the
	// servers' logs out (it is the exercise's, not the rig's), and every
	// Lock of a client is bounded (lockBound).
	exercise bool
	longest  atomic.Int64 // the longest TTL of the scene's clients so far, in ns (see lease)
}

func newScene(t testing.TB, timeout time.Duration) *Scene {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return &Scene{
		timeout: timeout,
		Ctx:     ctx,
		Key:     defaultKey,
		TTL:     defaultTTL,
		Params:  map[string]string{},
		Store:   defaultStore,
		t:       t,
		hist:    history.New(history.NewClock()),
	}
}

// T returns the test the scene runs in.
func (s *Scene) T() testing.TB { return s.t }

// Fatalf fails the test now, with the timeline so far and the violations
// found in it: when a client hangs or a step fails, what happened before
// often says why.
func (s *Scene) Fatalf(format string, args ...any) {
	s.t.Helper()
	events := s.hist.Events()
	s.t.Fatalf("%s\n--- the timeline so far:\n%s", fmt.Sprintf(format, args...), history.Render(events, history.Check(events)))
}

// Must fails the test if err is not nil.
func (s *Scene) Must(err error) {
	s.t.Helper()
	if err != nil {
		s.Fatalf("labs: %v", err)
	}
}

// Nodes starts n independent redis-server nodes the first time it is
// called and returns them; later calls return the same nodes. Clients talk
// to every node, in order (see [Env.Redis]).
func (s *Scene) Nodes(n int, opts ...rig.Option) []*rig.Node {
	s.t.Helper()
	if s.nodes == nil {
		var tb testing.TB = s.t
		if s.exercise {
			tb = quietTB{s.t}
		}
		s.nodes = rig.StartN(tb, n, opts...)
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

func (s *Scene) env(name string, opts []ClientOption) *Env {
	e := &Env{Client: name, Key: s.Key, TTL: s.TTL, Params: map[string]string{}, Spread: s.spread}
	for k, v := range s.Params {
		e.Params[k] = v
	}
	for _, o := range opts {
		o(e)
	}
	for {
		old := s.longest.Load()
		if int64(e.TTL) <= old || s.longest.CompareAndSwap(old, int64(e.TTL)) {
			break
		}
	}
	if e.Addrs == nil {
		for _, n := range s.Nodes(1) {
			e.Addrs = append(e.Addrs, n.Addr())
		}
	}
	return e
}

// Client starts a client named name (one letter reads best on the
// timeline) in a goroutine of this process. When the test ends, the
// client releases what its lock still holds, as the exit of a process
// does: a hold kept in this process's memory does not outlive the test.
func (s *Scene) Client(name string, impl *Impl, opts ...ClientOption) *Client {
	s.t.Helper()
	return s.started(s.startGoroutine(s.spec(name, impl, opts)))
}

// Process starts a client named name in a child process, so the scenario
// can crash it for real ([Client.Kill]) or freeze it ([Client.Freeze]).
func (s *Scene) Process(name string, impl *Impl, opts ...ClientOption) *Client {
	s.t.Helper()
	return s.started(s.startProcess(s.spec(name, impl, opts)))
}

// spec is what a new client needs, wherever it runs: its recipe, its
// environment and the scene's clock.
func (s *Scene) spec(name string, impl *Impl, opts []ClientOption) childSpec {
	return childSpec{Impl: impl.Name, Env: s.env(name, opts), ClockBase: s.hist.Clock().Base()}
}

// started counts c among the scene's clients and stops it when the test
// ends.
func (s *Scene) started(c *Client) *Client {
	s.clients++
	s.t.Cleanup(c.close)
	return c
}

// Local returns a client to use directly from the test's goroutines (a
// stress loop), recording into the scene's history. It has no step
// control. When the test ends it releases what its lock still holds, as a
// client of [Scene.Client] does.
func (s *Scene) Local(name string, impl *Impl, opts ...ClientOption) *Local {
	s.t.Helper()
	l := newLocal(s.env(name, opts), impl, s.hist.Clock(), s.hist.Add, func(string) {})
	s.clients++
	s.t.Cleanup(func() {
		l.releaseHeld()
		l.Close()
	})
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
	if !s.poll(s.Ctx, what, cond) {
		s.Fatalf("labs: timed out waiting until %s", what)
	}
}

// EventuallyWithin polls cond as [Scene.Eventually] does, for d at most,
// and reports whether it held by then: for a wait that may end either way
// (what has landed within a moment), where Eventually's is one the scene
// must get past. An error from cond fails the test naming what.
func (s *Scene) EventuallyWithin(d time.Duration, what string, cond func() (bool, error)) bool {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.Ctx, d)
	defer cancel()
	return s.poll(ctx, what, cond)
}

// poll calls cond every millisecond until it holds (true) or ctx ends
// (false); an error from cond fails the test.
func (s *Scene) poll(ctx context.Context, what string, cond func() (bool, error)) bool {
	s.t.Helper()
	for {
		ok, err := cond()
		if err != nil {
			s.Fatalf("labs: waiting until %s: %v", what, err)
		}
		if ok {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(time.Millisecond):
		}
	}
}

// WaitFor waits until cond holds, as [Scene.Eventually] does, and then
// records a fault on the timeline: for what the system does by itself (a
// lease runs out, a server ends a session, the members elect a new
// leader), which the scenario can only wait for.
func (s *Scene) WaitFor(what string, cond func() (bool, error), format string, args ...any) {
	s.t.Helper()
	s.Eventually(what, cond)
	s.Fault(format, args...)
}

// WaitExpired waits until key is gone from the first node and records that
// its TTL ran out.
func (s *Scene) WaitExpired(key string) {
	s.t.Helper()
	s.WaitFor(key+" is gone", func() (bool, error) {
		n, err := s.Redis().Exists(s.Ctx, key).Result()
		return n == 0, err
	}, "%s expired", key)
}

// lockMargin is how many times the scene's lease a Lock of the learner's
// lock may take (lockBound): 5x, the margin every timing in the labs keeps.
const lockMargin = 5

// lease is the scene's lease: the longest TTL of the clients made so far,
// or the scene's TTL if it is longer.
func (s *Scene) lease() time.Duration {
	return max(s.TTL, time.Duration(s.longest.Load()))
}

// lockBound is how long the scenario waits for a Lock of the learner's
// lock whose context ends after wait (0: none) before failing the test:
// lockMargin times the scene's lease, after wait. A Lock returns when it
// takes the lock: at the latest once the holder's lease runs out, if the
// holder never releases it. One that has not returned by then waits on
// something else (a hold kept in its process, a context it ignores), and
// the test says so at once instead of at the scene's deadline.
func (s *Scene) lockBound(wait time.Duration) time.Duration {
	return wait + lockMargin*s.lease()
}

// quietTB is a test as the rig sees it in an exercise run: one that never
// failed, so that the rig does not log the servers' logs when the
// learner's exercise is caught. Everything else is the test's own.
type quietTB struct{ testing.TB }

func (quietTB) Failed() bool { return false }

// QuietT returns t as the rig should see it when a lab starts servers for
// a learner's exercise outside one scene (an exploration's or a
// contract's, which serve many scenes): a test that never reports
// failing, so that a caught exercise leaves the servers' logs out, as
// [Scene.ServerT] does. Everything else is t's own.
func QuietT(t testing.TB) testing.TB { return quietTB{t} }

// maxGaps bounds [Scene.Gaps]: no lock operation in the labs sends more
// Redis commands than this.
const maxGaps = 12

// Gaps runs round for each gap between a client's Redis commands in turn,
// for a check that must hold wherever the client stalls or dies, however
// the lock's code is written: round(k) stalls the client before its k-th
// command (labs.Command(k)), for k = from, from+1, ..., and reports whether
// the client reached that point. The first round whose client finished
// without reaching it covers the gap after its last command, and is the
// last. Each round has a key of its own (the scene's key with "/k"), so
// that what one round leaves behind does not meet the next; it is noted on
// the timeline.
func (s *Scene) Gaps(from int, round func(k int) (reached bool)) {
	s.t.Helper()
	key := s.Key
	defer func() { s.Key = key }()
	for k := from; k < from+maxGaps; k++ {
		s.Key = fmt.Sprintf("%s/%d", key, k)
		s.Note("round %d: %s", k-from+1, s.Key)
		if !round(k) {
			return
		}
	}
	s.Fatalf("labs: Gaps: the client still reached command %d: more commands than any lock here sends", from+maxGaps-1)
}

// ServerT is the test to hand the rig when a scenario starts servers of
// its own (etcd, ZooKeeper, PostgreSQL): in an exercise run, one that
// leaves the servers' logs out of a failure, as [Scene.Nodes] does for
// Redis; otherwise the scene's test.
func (s *Scene) ServerT() testing.TB {
	if s.exercise {
		return quietTB{s.t}
	}
	return s.t
}
