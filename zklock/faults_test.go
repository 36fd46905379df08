package zklock_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/internal/locktest"
	"github.com/locklab/locklab/internal/rig"
	"github.com/locklab/locklab/zklock"
)

// The regression tests of issue 34's findings on zklock, each on a
// ZooKeeper server of its own behind a faulty path (see wire_test.go).

// doneOpen reports whether l's Done is still open.
func doneOpen(m *zklock.Mutex) bool {
	select {
	case <-m.Done():
		return false
	default:
		return true
	}
}

// TestLockWhileSessionRenews: a Lock issued while go-zookeeper
// re-establishes an expired session (its session id reads 0 for about a
// second) creates its child on the new session. The hold must be judged
// by the child, not by a session id read at another moment: Lock returns
// with Done open, Unlock deletes the child (nil), and the next client gets
// the lock. It used to record session 0, return ErrNotHeld from Unlock
// without deleting, and leave the child at the head of the line for good.
func TestLockWhileSessionRenews(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	z := rig.StartZooKeeper(t, 1, rig.WithZooKeeperForTests())
	f := faultyPath(t, z.Addrs()[0])
	const short = time.Second
	s := session(t, short, f.Addr())
	direct := session(t, timeout, z.Addrs()...)
	p := lockPath(t)

	a := zklock.New(s, p)
	locktest.Warm(t, ctx, a)           // a knows its path exists: its next Lock starts with the create
	probe := zklock.New(s, p+"-probe") // its child shows when the session ends
	if err := probe.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	f.proxy.Blackhole()
	locktest.Eventually(t, 20*short, "the server expires a's session", func() bool {
		return len(children(t, direct, p+"-probe")) == 0
	})
	f.proxy.Heal()
	locktest.Eventually(t, 20*short, "go-zookeeper learns its session expired", func() bool { return s.ID() == 0 })

	lctx, cancel := context.WithTimeout(ctx, 20*short)
	defer cancel()
	if err := a.Lock(lctx); err != nil {
		t.Fatalf("Lock while the session renews = %v; want nil", err)
	}
	if !doneOpen(a) {
		t.Errorf("Lock returned a hold whose Done is already closed")
	}
	if err := a.Unlock(ctx); err != nil {
		t.Errorf("Unlock = %v; want nil (children: %q)", err, children(t, direct, p))
	}
	b := zklock.New(direct, p)
	bctx, bcancel := context.WithTimeout(ctx, 10*short)
	defer bcancel()
	if err := b.Lock(bctx); err != nil {
		t.Fatalf("b.Lock after a's Unlock = %v; want nil (children: %q)", err, children(t, direct, p))
	}
	_ = b.Unlock(ctx)
}

// TestLockCtxWhenConnectionCannotReturn: the create lands but its reply is
// lost, and the connection cannot come back. Lock returns when its ctx
// ends (ErrNotObtained and DeadlineExceeded), not a session timeout later;
// once the network heals, the child is deleted in the background.
func TestLockCtxWhenConnectionCannotReturn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	z := rig.StartZooKeeper(t, 1, rig.WithZooKeeperForTests())
	f := faultyPath(t, z.Addrs()[0])
	const long = 20 * time.Second // the session outlives the test's waits
	s := session(t, long, f.Addr())
	direct := session(t, timeout, z.Addrs()...)
	p := lockPath(t)
	a := zklock.New(s, p)
	locktest.Warm(t, ctx, a) // the lock's node exists: a's next request is the create

	lost := f.wire.DropReply(opCreate, "/lock-")
	const wait = time.Second
	lctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	got := make(chan error, 1)
	start := time.Now()
	go func() { got <- a.Lock(lctx) }()
	select {
	case <-lost:
	case <-time.After(10 * time.Second):
		t.Fatal("the create was not sent within 10s")
	}
	f.proxy.Reset() // no new connection gets through until Heal
	select {
	case err := <-got:
		took := time.Since(start)
		if !errors.Is(err, zklock.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Lock = %v; want ErrNotObtained and DeadlineExceeded", err)
		}
		if took > 5*wait {
			t.Errorf("Lock with a %v ctx returned after %v; want within %v", wait, took.Round(time.Millisecond), 5*wait)
		}
	case <-time.After(15 * wait):
		f.proxy.Heal()
		t.Fatalf("Lock with a %v ctx still running after %v (session timeout %v)", wait, 15*wait, long)
	}
	f.proxy.Heal()
	locktest.Eventually(t, long, "a's child is deleted once the connection is back", func() bool {
		return len(children(t, direct, p)) == 0
	})
}

// TestBlipWhileWaiting: a's connection drops while it waits in line and
// comes back on the same session. When b releases, a gets the lock, and
// its Done is open: the blip ended before the grant, and a hold's Done
// speaks of the connection since its grant.
func TestBlipWhileWaiting(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	z := rig.StartZooKeeper(t, 1, rig.WithZooKeeperForTests())
	f := faultyPath(t, z.Addrs()[0])
	s := session(t, timeout, f.Addr())
	direct := session(t, timeout, z.Addrs()...)
	p := lockPath(t)
	b := zklock.New(direct, p)
	if err := b.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	hook, claimed := locktest.Signal(zklock.HookClaimed)
	a := zklock.New(s, p, zklock.WithHook(hook))
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	got := locktest.LockQueued(t, lctx, a, claimed)

	id := s.ID()
	f.proxy.Reset()
	locktest.Eventually(t, 10*time.Second, "a's client sees its connection drop", func() bool {
		return s.Conn().State() != zk.StateHasSession
	})
	f.proxy.Heal()
	locktest.Eventually(t, 10*time.Second, "a's client is back", func() bool {
		return s.Conn().State() == zk.StateHasSession
	})
	if s.ID() != id {
		t.Fatalf("session %x became %x: the blip was meant to keep it", id, s.ID())
	}
	if err := b.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("a.Lock = %v; want nil", err)
	}
	if !doneOpen(a) {
		t.Errorf("a.Lock returned a hold whose Done is already closed")
	}
	if err := a.Unlock(ctx); err != nil {
		t.Errorf("a.Unlock = %v; want nil", err)
	}
}

// TestLongPathRefused: a path of 1 MiB would make the server drop the
// session's connection (its requests exceed jute.maxbuffer), so every
// other lock on the Session would see Done close. The Mutex refuses it
// with ErrInvalid before sending anything.
func TestLongPathRefused(t *testing.T) {
	ctx := context.Background()
	s := session(t, timeout)
	other := zklock.New(s, lockPath(t))
	if err := other.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	defer other.Unlock(ctx)
	m := zklock.New(s, "/locklab/test/"+strings.Repeat("x", 1<<20))
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := m.Lock(lctx); !errors.Is(err, zklock.ErrInvalid) {
		t.Errorf("Lock on a 1 MiB path = %v; want ErrInvalid", err)
	}
	if !doneOpen(other) {
		t.Errorf("another lock's Done closed after the Lock on a 1 MiB path")
	}
}

// envInt returns the integer in the environment variable name, or def.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// TestDoneBeforeOthersHold: with 800 ms each way on the holder's
// connection, then a partition, a's Done closes before b (on a clean
// connection) holds the lock, with a margin: the package promises a third
// of the session timeout before the server may expire the session; the
// test asks for a sixth, leaving the rest to the machine's scheduling.
// Each trial cuts at another moment of the ping cycle; the trials run at
// once. ZKLOCK_DONE_TRIALS sets their number (default 4),
// ZKLOCK_DONE_SESSION the session timeout in ms (default 8000: long
// enough for the connection to live through the latency, a round trip
// of 1.6s).
func TestDoneBeforeOthersHold(t *testing.T) {
	t.Parallel()
	doneTrials(t, false, time.Duration(envInt("ZKLOCK_DONE_SESSION", 8000))*time.Millisecond)
}

// TestDoneBeforeOthersHoldSlowReplies is TestDoneBeforeOthersHold with
// the 800 ms on the replies only, and a session of 3s
// (ZKLOCK_DONE_REPLY_SESSION): requests reach the server at once, so it
// keeps hearing from the client until the cut, while the client hears
// 800 ms late. go-zookeeper's own timer (2/3 of the timeout after the
// last answer arrived) closed Done only T/3 - 800 ms before the server
// could expire the session (about 300 ms before b held the lock); the
// Session's own deadline, dated by the requests' sends, keeps T/3.
func TestDoneBeforeOthersHoldSlowReplies(t *testing.T) {
	t.Parallel()
	doneTrials(t, true, time.Duration(envInt("ZKLOCK_DONE_REPLY_SESSION", 3000))*time.Millisecond)
}

// doneTrials runs the trials of TestDoneBeforeOthersHold, with the
// latency on the replies only if replies.
func doneTrials(t *testing.T, replies bool, sessionTimeout time.Duration) {
	trials := envInt("ZKLOCK_DONE_TRIALS", 4)
	const latency = 800 * time.Millisecond
	z := rig.StartZooKeeper(t, 1, rig.WithZooKeeperForTests())
	direct := session(t, 30*time.Second, z.Addrs()...)

	results := make([]doneResult, trials)
	var wg sync.WaitGroup
	for i := range trials {
		wg.Go(func() { results[i] = doneTrial(t, z.Addrs()[0], direct, sessionTimeout, latency, replies, i) })
	}
	wg.Wait()
	first, margin := 0, sessionTimeout/6
	for i, r := range results {
		switch {
		case r.err != nil:
			t.Errorf("trial %d: %v", i, r.err)
		case r.doneAt < r.heldAt:
			first++
			t.Logf("trial %d: a's Done closed at %v, b held at %v (since the cut): %v before", i, r.doneAt.Round(time.Millisecond), r.heldAt.Round(time.Millisecond), (r.heldAt - r.doneAt).Round(time.Millisecond))
			if r.heldAt-r.doneAt < margin {
				t.Errorf("trial %d: a's Done closed only %v before b held the lock; want at least %v", i, (r.heldAt - r.doneAt).Round(time.Millisecond), margin)
			}
		default:
			t.Errorf("trial %d: b held the lock at %v, before a's Done closed at %v (since the cut)", i, r.heldAt.Round(time.Millisecond), r.doneAt.Round(time.Millisecond))
		}
	}
	way := "each way"
	if replies {
		way = "on replies"
	}
	t.Logf("a's Done closed before b held the lock in %d of %d trials (session %v, latency %v %s)", first, trials, sessionTimeout, latency, way)
}

// doneResult is the outcome of one trial of TestDoneBeforeOthersHold.
type doneResult struct {
	doneAt, heldAt time.Duration // since the cut; doneAt < 0: before it
	err            error
}

// doneTrial runs one trial of TestDoneBeforeOthersHold. It runs in its
// own goroutine, so it reports errors instead of failing t.
func doneTrial(t *testing.T, addr string, direct *zklock.Session, sessionTimeout, latency time.Duration, replies bool, i int) (r doneResult) {
	ctx := context.Background()
	proxy, err := faultproxy.New(addr)
	if err != nil {
		r.err = err
		return r
	}
	defer proxy.Close()
	dial, slow := proxy.Addr(), proxy.SetLatency
	if replies {
		w, err := newWire(proxy.Addr())
		if err != nil {
			r.err = err
			return r
		}
		defer w.close()
		dial, slow = w.Addr(), w.SetReplyLatency
	}
	s, err := zklock.Connect([]string{dial}, sessionTimeout)
	if err != nil {
		r.err = err
		return r
	}
	defer s.Close()
	p := lockPath(t)
	a, b := zklock.New(s, p), zklock.New(direct, p)
	if err := a.Lock(ctx); err != nil {
		r.err = err
		return r
	}
	doneTime := make(chan time.Time, 1)
	go func() { <-a.Done(); doneTime <- time.Now() }()
	slow(latency)
	// Cut at another moment of the ping cycle in each trial, once the
	// latency has been in force for at least a round trip.
	time.Sleep(2*latency + time.Duration(i%10)*sessionTimeout/30)
	proxy.Blackhole()
	cut := time.Now()
	bctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := b.Lock(bctx); err != nil {
		r.err = err
		return r
	}
	r.heldAt = time.Since(cut)
	_ = b.Unlock(ctx)
	select {
	case at := <-doneTime:
		r.doneAt = at.Sub(cut)
	case <-time.After(30 * time.Second):
		r.err = errors.New("a's Done still open 30s after the cut")
	}
	proxy.Heal()
	return r
}
