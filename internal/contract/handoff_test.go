package contract_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/locklab/locklab/internal/keyslot"
	"github.com/locklab/locklab/internal/leakcheck"
	"github.com/locklab/locklab/internal/locktest"
)

// The hand-off scenarios, for the kinds whose Lock waits in a queue and is
// handed the lock by a Notifier (correct and redlock with one), with no
// fault injected: the order of the queue, the waiters that die or give
// up, the wake-up a release must not lose, a Notifier that closes, a
// release of a key someone else took.

// queueKey names key's wait queue in the queued kinds.
func queueKey(key string) string { return keyslot.Base(key) + ":q" }

// admins returns a client of each of k's servers, closed when the test
// ends.
func admins(t *testing.T, k kind) []*redis.Client {
	t.Helper()
	return partyClients(t, k, strict, nil)
}

// queue returns the tokens in key's queue on c: a list (correct) or a
// sorted set (redlock).
func queue(t *testing.T, c *redis.Client, key string) []string {
	t.Helper()
	ctx := context.Background()
	q := queueKey(key)
	switch typ := c.Type(ctx, q).Val(); typ {
	case "none":
		return nil
	case "list":
		return c.LRange(ctx, q, 0, -1).Val()
	case "zset":
		return c.ZRange(ctx, q, 0, -1).Val()
	default:
		t.Fatalf("queue %s is a %q", q, typ)
		return nil
	}
}

// token returns the random value of l's hold.
func token(l locker) string { return l.(interface{ Token() string }).Token() }

// mustLock locks p, and waits for its commands still in flight (redlock
// returns at a majority): waiters queued next find its token everywhere.
func mustLock(t *testing.T, ctx context.Context, p *party) {
	t.Helper()
	if err := p.lock.Lock(ctx); err != nil {
		t.Fatalf("%s's Lock = %v", p.name, err)
	}
	settle(ctx, p.lock)
}

// checkNoTrace fails the test unless the lock key and its queue are gone
// from every node once the releases in flight have landed (redlock's
// Unlock returns at a majority), waiting up to 10s.
func checkNoTrace(t *testing.T, k kind, key string) {
	t.Helper()
	for i, c := range admins(t, k) {
		locktest.Eventually(t, 10*time.Second, fmt.Sprintf("node %d: lock key and queue gone", i), func() bool {
			n, err := c.Exists(context.Background(), key, queueKey(key)).Result()
			return err == nil && n == 0
		})
	}
}

// mustUnlock unlocks p, failing the test if Unlock fails.
func mustUnlock(t *testing.T, ctx context.Context, p *party) {
	t.Helper()
	if err := p.lock.Unlock(ctx); err != nil {
		t.Fatalf("%s's Unlock = %v", p.name, err)
	}
}

// queueUp starts p's Lock, waits until it has joined the queue and returns
// the Lock's result channel.
func queueUp(t *testing.T, ctx context.Context, p *party) <-chan error {
	t.Helper()
	got := lockAsync(ctx, p)
	waitQueued(t, p, got)
	return got
}

// gotWithin fails the test with why unless the Lock behind got returns nil
// within d.
func gotWithin(t *testing.T, got <-chan error, d time.Duration, why string) {
	t.Helper()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(d):
		t.Fatal(why)
	}
}

// handoffScenario runs scenario for each queued kind, checked for leaked
// goroutines, with a fresh key and a context of 30s, so that a hung Lock
// fails the test.
func handoffScenario(t *testing.T, scenario func(t *testing.T, k kind, ctx context.Context, key string)) {
	forQueued(t, func(t *testing.T, k kind) {
		leakcheck.Guard(t)
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		scenario(t, k, ctx, newKey(t, k))
	})
}

// checkHolders fails the test unless every one of nodes holds want, the
// token of who, at key.
func checkHolders(t *testing.T, nodes []*redis.Client, key, want, who string) {
	t.Helper()
	for i, c := range nodes {
		got, err := c.Get(context.Background(), key).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatalf("node %d GET %q: %v", i, key, err)
		}
		if got != want {
			t.Errorf("node %d holds %q; want %s's token %q", i, got, who, want)
		}
	}
}

// TestHandoffIsFirstComeFirstServed queues five waiters of one process in a
// known order (each starts once the one before has queued) and checks
// that they get the lock in that order, each handed it by the one before.
func TestHandoffIsFirstComeFirstServed(t *testing.T) {
	handoffScenario(t, func(t *testing.T, k kind, ctx context.Context, key string) {
		process := sharedParties(t, k, key, longTTL)
		holder := process("H")
		mustLock(t, ctx, holder)
		var (
			mu    sync.Mutex
			order []int
		)
		var g errgroup.Group
		for i := range 5 {
			w := process(fmt.Sprint("W", i))
			got := queueUp(t, ctx, w) // the next waiter starts after this one joined the queue
			g.Go(func() error {
				if err := <-got; err != nil {
					return err
				}
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				return w.lock.Unlock(ctx)
			})
		}
		mustUnlock(t, ctx, holder)
		if err := g.Wait(); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(order, []int{0, 1, 2, 3, 4}) {
			t.Errorf("waiters got the lock in order %v; want [0 1 2 3 4]", order)
		}
		checkNoTrace(t, k, key)
	})
}

// TestHandoffSkipsADeadWaiter puts a dead waiter's token at the head of
// the queue on every node (its process is gone: nobody listens on its
// channel). The release must pass it by at once instead of leaving the
// lock with it for a whole TTL.
func TestHandoffSkipsADeadWaiter(t *testing.T) {
	handoffScenario(t, func(t *testing.T, k kind, ctx context.Context, key string) {
		const ttl = 10 * time.Second // a stall would last this long
		process := sharedParties(t, k, key, ttl)
		holder := process("H")
		mustLock(t, ctx, holder)
		nodes := admins(t, k)
		for _, c := range nodes {
			if err := k.deadWaiter(ctx, c, key); err != nil {
				t.Fatal(err)
			}
		}
		w := process("W")
		got := queueUp(t, ctx, w)
		mustUnlock(t, ctx, holder)
		// Well before the waiter's own look at ttl/4.
		gotWithin(t, got, ttl/8, "the live waiter did not get the lock: the release left it with the dead waiter")
		settle(ctx, holder.lock) // its Unlock returned at a majority; the rest land now
		checkHolders(t, nodes, key, token(w.lock), "the live waiter")
		mustUnlock(t, ctx, w)
		checkNoTrace(t, k, key)
	})
}

// TestHandoffRecoversFromADeadHolder: the holder never unlocks (its process
// died). The queued waiters get the lock once its keys expire, through
// their own looks at the lock (every ttl/4), within about the TTL plus a
// quarter TTL.
func TestHandoffRecoversFromADeadHolder(t *testing.T) {
	handoffScenario(t, func(t *testing.T, k kind, ctx context.Context, key string) {
		const ttl = 250 * time.Millisecond
		// redlock's default per-node timeout at this TTL, 50ms, is tight
		// for a loaded machine; half the TTL leaves room and still fits.
		short := func(e *env) { e.nodeTimeout = ttl / 2 }
		dead := sharedParties(t, k, key, ttl, short)("dead") // never unlocked
		// A round of redlock's that falls short (a node slow to answer)
		// is not the point here: try until the dead holder holds.
		for ok := false; !ok; {
			var err error
			if ok, err = dead.lock.TryLock(ctx); ctx.Err() != nil {
				t.Fatalf("the dead holder's TryLock = %v, %v", ok, err)
			}
		}
		start := time.Now()
		var g errgroup.Group
		for i := range 3 {
			w := newParty(t, k, fmt.Sprint("W", i), key, ttl, user, nil, short)
			g.Go(func() error {
				if err := w.lock.Lock(ctx); err != nil {
					return err
				}
				return w.lock.Unlock(ctx)
			})
		}
		if err := g.Wait(); err != nil {
			t.Fatal(err)
		}
		// One lease runs out, then the waiters' looks every ttl/4 find the
		// lock free; then they hand it on. 5x margin for a loaded machine.
		if took := time.Since(start); took > 5*(ttl+ttl/4) {
			t.Errorf("waiters took %v to get past a dead holder; want about %v", took, ttl+ttl/4)
		}
		checkNoTrace(t, k, key)
	})
}

// TestHandoffNoLostWakeup forces the lost wake-up race: the waiter's first
// try is refused, and before it joins the queue the holder releases with
// nobody queued, so no hand-off message will ever come. The waiter must
// still get the lock at once, not at its periodic look.
func TestHandoffNoLostWakeup(t *testing.T) {
	handoffScenario(t, func(t *testing.T, k kind, ctx context.Context, key string) {
		const ttl = 10 * time.Second
		holder := newParty(t, k, "H", key, ttl, user, nil)
		mustLock(t, ctx, holder)
		w := newParty(t, k, "W", key, ttl, user, nil)
		refused, release := make(chan struct{}), make(chan struct{})
		var once sync.Once
		w.at = func(point string) {
			if point == k.refusedHook {
				once.Do(func() { close(refused) })
				<-release
			}
		}
		got := lockAsync(ctx, w)
		select {
		case <-refused:
		case <-time.After(10 * time.Second):
			t.Fatal("the waiter's first try was not refused within 10s")
		}
		mustUnlock(t, ctx, holder) // nobody queued: no message
		close(release)
		gotWithin(t, got, ttl/8, "the waiter slept through the release (lost wake-up)")
		mustUnlock(t, ctx, w)
		checkNoTrace(t, k, key)
	})
}

// TestHandoffWaiterGivesUp: a queued waiter whose ctx ends leaves every
// queue and returns ErrNotObtained joined with the ctx error; the holder
// is unaffected, and its Unlock leaves nothing behind.
func TestHandoffWaiterGivesUp(t *testing.T) {
	handoffScenario(t, func(t *testing.T, k kind, ctx context.Context, key string) {
		process := sharedParties(t, k, key, longTTL)
		holder, quitter := process("H"), process("Q")
		mustLock(t, ctx, holder)
		qctx, cancel := context.WithCancel(ctx)
		got := queueUp(t, qctx, quitter)
		cancel()
		if err := <-got; !errors.Is(err, k.errNotObtained) || !errors.Is(err, context.Canceled) {
			t.Fatalf("Lock after cancel = %v; want ErrNotObtained joined with context.Canceled", err)
		}
		nodes := admins(t, k)
		for i, c := range nodes {
			if q := queue(t, c, key); len(q) != 0 {
				t.Errorf("node %d queue after the waiter gave up = %q; want empty", i, q)
			}
		}
		checkHolders(t, nodes, key, token(holder.lock), "the holder")
		mustUnlock(t, ctx, holder)
		checkNoTrace(t, k, key)
	})
}

// TestHandoffMutualExclusion: 16 parties, each with its own connections
// and Notifier (as separate processes would have), take turns ten times
// each; no two are ever inside the critical section at once, and nothing
// is left behind.
func TestHandoffMutualExclusion(t *testing.T) {
	handoffScenario(t, func(t *testing.T, k kind, ctx context.Context, key string) {
		const parties, rounds = 16, 10
		var locks []locktest.Locker
		for i := range parties {
			locks = append(locks, newParty(t, k, fmt.Sprint("P", i), key, longTTL, user, nil).lock)
		}
		most, total, err := locktest.Turns(ctx, locks, rounds, 0)
		if err != nil {
			t.Fatal(err)
		}
		if most != 1 || total != parties*rounds {
			t.Fatalf("max holders at once %d, acquisitions %d; want 1, %d", most, total, parties*rounds)
		}
		checkNoTrace(t, k, key)
	})
}

// TestNotifierClose: a queued waiter's Lock returns ErrNotObtained when its
// Notifier closes; a second Close returns nil, and a Lock with a closed
// Notifier returns ErrNotObtained.
func TestNotifierClose(t *testing.T) {
	handoffScenario(t, func(t *testing.T, k kind, ctx context.Context, key string) {
		holder := newParty(t, k, "H", key, longTTL, strict, nil)
		mustLock(t, ctx, holder)
		w := newParty(t, k, "W", key, longTTL, user, nil)
		got := queueUp(t, ctx, w)
		n := w.notifier.(interface{ Close() error })
		if err := n.Close(); err != nil {
			t.Fatal(err)
		}
		if err := <-got; !errors.Is(err, k.errNotObtained) {
			t.Errorf("Lock when its Notifier closes = %v; want ErrNotObtained", err)
		}
		if err := n.Close(); err != nil {
			t.Errorf("second Close = %v; want nil", err)
		}
		if err := w.lock.Lock(ctx); !errors.Is(err, k.errNotObtained) {
			t.Errorf("Lock with a closed Notifier = %v; want ErrNotObtained", err)
		}
		mustUnlock(t, ctx, holder)
		checkNoTrace(t, k, key)
	})
}

// TestReleaseOfAForeignKeyChangesNothing: someone outside the protocol
// deleted the key on every node (an operator's DEL) and B took the lock; W
// queued behind B. A's release, within what A thinks is its lease, must
// say ErrNotHeld and leave B's keys and the queue exactly as they were.
// (correct's release once skipped the owner read within the lease and
// undid a mismatch after its SET ... GET: sent twice, that undo gave B's
// key W's TTL.)
func TestReleaseOfAForeignKeyChangesNothing(t *testing.T) {
	handoffScenario(t, func(t *testing.T, k kind, ctx context.Context, key string) {
		process := sharedParties(t, k, key, longTTL)
		a, b, w := process("A"), process("B"), process("W")
		mustLock(t, ctx, a)
		nodes := admins(t, k)
		for _, c := range nodes {
			c.Del(ctx, key) // an operator deletes the lock under A
		}
		mustLock(t, ctx, b) // B holds every node before W queues
		got := queueUp(t, ctx, w)
		before := make([][]string, len(nodes))
		for i, c := range nodes {
			before[i] = queue(t, c, key)
		}
		if !time.Now().Before(a.lock.(interface{ Until() time.Time }).Until()) {
			t.Fatal("A's lease ran out; the test needs a release within it")
		}
		if err := a.lock.Unlock(ctx); !errors.Is(err, k.errNotHeld) {
			t.Fatalf("A's Unlock after its key was taken over = %v; want ErrNotHeld", err)
		}
		checkHolders(t, nodes, key, token(b.lock), "B") // else A's release undid the hand-off
		for i, c := range nodes {
			if q := queue(t, c, key); len(q) != 1 || !slices.Equal(q, before[i]) {
				t.Fatalf("node %d queue after A's release = %q; want %q, the waiter still queued", i, q, before[i])
			}
		}
		mustUnlock(t, ctx, b) // B hands over to W
		if err := wait(ctx, got); err != nil {
			t.Fatal(err)
		}
		mustUnlock(t, ctx, w)
		checkNoTrace(t, k, key)
	})
}
