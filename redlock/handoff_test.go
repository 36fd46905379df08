package redlock_test

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
	"github.com/locklab/locklab/internal/rig"
	"github.com/locklab/locklab/redlock"
)

// withNotifier returns clients of the nodes at addrs and a Notifier on
// them, as one process would have; the Notifier is closed, then the
// clients, when the test ends.
func withNotifier(t *testing.T, addrs []string) ([]redlock.Client, *redlock.Notifier) {
	t.Helper()
	cs := clientsFor(t, addrs)
	ncs := make([]redlock.NotifyClient, len(cs))
	for i, c := range cs {
		ncs[i] = c.(*redis.Client)
		// Connect now: a first command that must dial can take longer
		// than the short node timeouts some tests use.
		if err := ncs[i].(*redis.Client).Ping(ctxFor(t)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	n, err := redlock.NewNotifier(ctxFor(t), ncs)
	if err != nil {
		t.Fatalf("NewNotifier() = %v", err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return cs, n
}

// signal returns a hook that reports each time point is reached.
func signal(point string) (redlock.Option, <-chan struct{}) {
	ch := make(chan struct{}, 64)
	return redlock.WithHook(func(_ context.Context, p string) {
		if p == point {
			ch <- struct{}{}
		}
	}), ch
}

// await waits for ch, failing the test if it takes longer than d.
func await(t *testing.T, ch <-chan struct{}, d time.Duration, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(d):
		t.Fatalf("%s did not happen within %v", what, d)
	}
}

// lockAsync runs m.Lock in a goroutine and returns its result channel.
func lockAsync(ctx context.Context, m *redlock.Mutex) <-chan error {
	done := make(chan error, 1)
	go func() { done <- m.Lock(ctx) }()
	return done
}

// queued returns the tokens in key's wait queue on node c, best first.
func queued(t *testing.T, c *redis.Client, key string) []redis.Z {
	t.Helper()
	z, err := c.ZRangeWithScores(context.Background(), redlock.QueueKey(key), 0, -1).Result()
	if err != nil {
		t.Fatalf("ZRANGE: %v", err)
	}
	return z
}

// lastQueued returns the newest waiter's token in key's queue on node 0.
func lastQueued(t *testing.T, key string) string {
	t.Helper()
	z := queued(t, admin[0], key)
	if len(z) == 0 {
		t.Fatal("queue is empty on node 0")
	}
	return z[len(z)-1].Member.(string)
}

// checkNoTrace fails the test if the lock key or its queue is still on
// any of the nodes behind cs once the releases in flight have landed:
// Unlock returns at a majority, so it waits for that, up to 10s.
func checkNoTrace(t *testing.T, cs []*redis.Client, key string) {
	t.Helper()
	for i, c := range cs {
		eventually(t, fmt.Sprintf("node %d: lock key and queue gone", i), func() (bool, string) {
			n, err := c.Exists(context.Background(), key, redlock.QueueKey(key)).Result()
			return err == nil && n == 0, fmt.Sprintf("EXISTS = %d, %v", n, err)
		})
	}
}

// TestHandoffIsFirstComeFirstServed queues five waiters in a known order
// (each starts once the one before has queued on every node) and checks
// that they get the lock in that order, each handed it by the one before.
func TestHandoffIsFirstComeFirstServed(t *testing.T) {
	leakcheck.Guard(t)
	ctx := ctxFor(t)
	cs, n := withNotifier(t, addrs)
	key := newKey(t)
	holder := redlock.New(cs, key, redlock.WithNotifier(n))
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	settle(t, holder)
	var (
		mu    sync.Mutex
		order []int
	)
	var g errgroup.Group
	for i := range 5 {
		hook, isQueued := signal(redlock.HookQueued)
		w := redlock.New(cs, key, redlock.WithNotifier(n), hook)
		g.Go(func() error {
			if err := w.Lock(ctx); err != nil {
				return err
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			return w.Unlock(ctx)
		})
		await(t, isQueued, 10*time.Second, "waiter queued")
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(order, []int{0, 1, 2, 3, 4}) {
		t.Errorf("waiters got the lock in order %v; want [0 1 2 3 4]", order)
	}
	checkNoTrace(t, admin, key)
}

// TestHandoffSkipsADeadWaiter puts a dead waiter's token at the head of
// every node's queue (its process is gone: nobody listens on its channel).
// The release must pass it by at once instead of leaving the lock with it
// for a whole TTL.
func TestHandoffSkipsADeadWaiter(t *testing.T) {
	leakcheck.Guard(t)
	ctx := ctxFor(t)
	cs, n := withNotifier(t, addrs)
	key := newKey(t)
	const ttl = 10 * time.Second // a stall would last this long
	holder := redlock.New(cs, key, redlock.WithNotifier(n), redlock.WithTTL(ttl))
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	settle(t, holder)
	dead := redis.Z{Score: 0, Member: "deadnotifier.10000.deadwaiter.1"} // ranks before everyone
	for _, c := range admin {
		if err := c.ZAdd(ctx, redlock.QueueKey(key), dead).Err(); err != nil {
			t.Fatal(err)
		}
	}
	hook, isQueued := signal(redlock.HookQueued)
	w := redlock.New(cs, key, redlock.WithNotifier(n), redlock.WithTTL(ttl), hook)
	done := lockAsync(ctx, w)
	await(t, isQueued, 10*time.Second, "waiter queued")
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(ttl / 8): // well before the waiter's own round at ttl/4
		t.Fatal("the live waiter did not get the lock: the release left it with the dead waiter")
	}
	settle(t, holder) // its Unlock returned at a majority; the rest land now
	for i, v := range holders(t, admin, key) {
		if v != w.Token() {
			t.Errorf("node %d holds %q; want the live waiter's token", i, v)
		}
	}
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	checkNoTrace(t, admin, key)
}

// TestHandoffRecoversFromADeadHolder: the holder never unlocks (its process
// died). The queued waiters get the lock once its keys expire, through
// their own rounds, within about the TTL plus a quarter TTL.
func TestHandoffRecoversFromADeadHolder(t *testing.T) {
	leakcheck.Guard(t)
	ctx := ctxFor(t)
	cs, n := withNotifier(t, addrs)
	key := newKey(t)
	const ttl = 250 * time.Millisecond
	opts := []redlock.Option{redlock.WithTTL(ttl), redlock.WithNodeTimeout(ttl / 2)}
	dead := redlock.New(cs, key, opts...) // never unlocked
	if err := lockWithin(ctx, dead); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var g errgroup.Group
	for range 3 {
		w := redlock.New(cs, key, append(opts, redlock.WithNotifier(n))...)
		g.Go(func() error {
			if err := w.Lock(ctx); err != nil {
				return err
			}
			return w.Unlock(ctx)
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	// One lease runs out, then the waiters' rounds every ttl/4 find the
	// nodes free; then they hand the lock on. 5x margin for a loaded machine.
	if took := time.Since(start); took > 5*(ttl+ttl/4) {
		t.Errorf("waiters took %v to get past a dead holder; want about %v", took, ttl+ttl/4)
	}
	checkNoTrace(t, admin, key)
}

// TestHandoffNoLostWakeup forces the lost wake-up race: the waiter's SET
// round is refused, and before it joins the queues the holder releases
// with nobody queued, so no hand-off message will ever come. The waiter
// must still get the lock at once, not at its periodic round.
func TestHandoffNoLostWakeup(t *testing.T) {
	leakcheck.Guard(t)
	ctx := ctxFor(t)
	cs, n := withNotifier(t, addrs)
	key := newKey(t)
	const ttl = 10 * time.Second
	holder := redlock.New(cs, key, redlock.WithTTL(ttl))
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	settle(t, holder)
	refused, release := make(chan struct{}), make(chan struct{})
	w := redlock.New(cs, key, redlock.WithNotifier(n), redlock.WithTTL(ttl), redlock.WithHook(func(_ context.Context, p string) {
		if p == redlock.HookRefused {
			close(refused)
			<-release
		}
	}))
	done := lockAsync(ctx, w)
	await(t, refused, 10*time.Second, "SET round refused")
	if err := holder.Unlock(ctx); err != nil { // nobody queued: a plain DEL, no message
		t.Fatal(err)
	}
	close(release)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(ttl / 8):
		t.Fatal("the waiter slept through the release (lost wake-up)")
	}
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	checkNoTrace(t, admin, key)
}

// TestHandoffWithANodeDown: one of five nodes is killed while waiters are
// queued. The other four hand the lock on as before, in order, without
// waiting for the waiters' periodic rounds.
func TestHandoffWithANodeDown(t *testing.T) {
	rig.RequireControl(t)
	leakcheck.Guard(t)
	ctx := ctxFor(t)
	nodes := startNodes(t, 5)
	cs, n := withNotifier(t, addrsOf(nodes))
	const key, ttl = "lock:node-down", 10 * time.Second
	holder := redlock.New(cs, key, redlock.WithNotifier(n), redlock.WithTTL(ttl))
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	settle(t, holder)
	var (
		mu    sync.Mutex
		order []int
	)
	var g errgroup.Group
	for i := range 2 {
		hook, isQueued := signal(redlock.HookQueued)
		w := redlock.New(cs, key, redlock.WithNotifier(n), redlock.WithTTL(ttl), hook)
		g.Go(func() error {
			if err := w.Lock(ctx); err != nil {
				return err
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			return w.Unlock(ctx)
		})
		await(t, isQueued, 10*time.Second, "waiter queued")
	}
	if err := nodes[4].Kill(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := holder.Unlock(ctx); err != nil {
		t.Fatalf("Unlock() with 1 of 5 nodes down = %v; want nil", err)
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > ttl/8 {
		t.Errorf("two hand-offs with a node down took %v; want well under the waiters' round every %v", took, ttl/4)
	}
	if !slices.Equal(order, []int{0, 1}) {
		t.Errorf("waiters got the lock in order %v; want [0 1]", order)
	}
	live := make([]*redis.Client, 4)
	for i := range live {
		live[i] = nodes[i].Client()
	}
	checkNoTrace(t, live, key)
}

// TestHandoffSplitIsResolved builds a split deterministically: three
// waiters A, B and C (in that order of arrival) are each removed from
// some nodes' queues, as if their rounds had missed those nodes, so the
// holder's release hands nodes 0-1 to A, 2-3 to B and 4 to C. Nobody has a
// majority. Their own rounds must resolve it without deadlock, well before
// the periodic round, each getting the lock once and never two at once.
// (Which of the three goes first depends on whose round reaches which node
// first: a node given up goes to the best waiter queued on it by then.)
func TestHandoffSplitIsResolved(t *testing.T) {
	leakcheck.Guard(t)
	ctx := ctxFor(t)
	cs, n := withNotifier(t, addrs)
	key := newKey(t)
	const ttl = 10 * time.Second
	holder := redlock.New(cs, key, redlock.WithNotifier(n), redlock.WithTTL(ttl))
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	settle(t, holder)
	var (
		mu      sync.Mutex
		order   []string
		inside  int
		overlap bool
	)
	var g errgroup.Group
	for _, w := range []struct {
		name   string
		missed []int // nodes whose queue loses this waiter
	}{{"A", []int{2, 3, 4}}, {"B", []int{0, 1, 4}}, {"C", []int{0, 1, 2, 3}}} {
		hook, isQueued := signal(redlock.HookQueued)
		m := redlock.New(cs, key, redlock.WithNotifier(n), redlock.WithTTL(ttl), hook)
		g.Go(func() error {
			if err := m.Lock(ctx); err != nil {
				return err
			}
			mu.Lock()
			order = append(order, w.name)
			inside++
			overlap = overlap || inside > 1
			mu.Unlock()
			mu.Lock()
			inside--
			mu.Unlock()
			return m.Unlock(ctx)
		})
		await(t, isQueued, 10*time.Second, w.name+" queued")
		tok := lastQueued(t, key)
		for _, i := range w.missed {
			if err := admin[i].ZRem(ctx, redlock.QueueKey(key), tok).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	start := time.Now()
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > ttl/8 {
		t.Errorf("the split took %v to resolve; want well under the periodic round every %v", took, ttl/4)
	}
	slices.Sort(order)
	if !slices.Equal(order, []string{"A", "B", "C"}) || overlap {
		t.Errorf("waiters got the lock %v (overlap %v); want A, B and C once each, one at a time", order, overlap)
	}
	checkNoTrace(t, admin, key)
}

// TestHandoffWaiterGivesUp: a queued waiter whose ctx ends leaves every
// queue and returns ErrNotObtained joined with the ctx error; the holder
// is unaffected, and its Unlock leaves nothing behind.
func TestHandoffWaiterGivesUp(t *testing.T) {
	leakcheck.Guard(t)
	ctx := ctxFor(t)
	cs, n := withNotifier(t, addrs)
	key := newKey(t)
	holder := redlock.New(cs, key, redlock.WithNotifier(n))
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	settle(t, holder)
	hook, isQueued := signal(redlock.HookQueued)
	quitter := redlock.New(cs, key, redlock.WithNotifier(n), hook)
	qctx, cancel := context.WithCancel(ctx)
	done := lockAsync(qctx, quitter)
	await(t, isQueued, 10*time.Second, "waiter queued")
	cancel()
	if err := <-done; !errors.Is(err, redlock.ErrNotObtained) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock() after cancel = %v; want ErrNotObtained joined with context.Canceled", err)
	}
	for i, c := range admin {
		if z := queued(t, c, key); len(z) != 0 {
			t.Errorf("node %d queue after the waiter gave up = %v; want empty", i, z)
		}
	}
	for i, v := range holders(t, admin, key) {
		if v != holder.Token() {
			t.Errorf("node %d holds %q; want the holder's token", i, v)
		}
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	checkNoTrace(t, admin, key)
}

// TestGivingUpPassesTheLockOn: a waiter gives up at the very moment the
// lock is handed to it. The release script run as it leaves (dequeue flag)
// must pass each node on to the next live waiter, not drop or keep it.
func TestGivingUpPassesTheLockOn(t *testing.T) {
	ctx := ctxFor(t)
	cs, n := withNotifier(t, addrs)
	key := newKey(t)
	const quitter = "quitternotifier.60000.quitter.1" // just handed the lock on every node
	for _, c := range admin {
		if err := c.Set(ctx, key, quitter, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	hook, isQueued := signal(redlock.HookQueued)
	next := redlock.New(cs, key, redlock.WithNotifier(n), hook)
	done := lockAsync(ctx, next)
	await(t, isQueued, 10*time.Second, "next waiter queued")
	for i, c := range admin {
		keys := []string{key, redlock.QueueKey(key), keyslot.Receipt(keyslot.Base(key), quitter)}
		r, err := redlock.Scripts["release"].Run(ctx, c, keys, quitter, "4000", "1").Int64()
		if err != nil || r != 2 {
			t.Fatalf("node %d: release.lua (giving up) = %d, %v; want 2 (handed on)", i, r, err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := next.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	checkNoTrace(t, admin, key)
}

// TestLateReleaseLeavesTheNextHolderAlone: a holder whose lease expired
// unlocks after another client took the lock and a third queued. The late
// release must touch neither the new holder's keys nor the queue.
func TestLateReleaseLeavesTheNextHolderAlone(t *testing.T) {
	leakcheck.Guard(t)
	ctx := ctxFor(t)
	cs, n := withNotifier(t, addrs)
	key := newKey(t)
	late := redlock.New(cs, key, redlock.WithTTL(100*time.Millisecond), redlock.WithNodeTimeout(50*time.Millisecond))
	if err := lockWithin(ctx, late); err != nil {
		t.Fatal(err)
	}
	waitGone(t, admin, key)
	holder := redlock.New(cs, key, redlock.WithNotifier(n))
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	settle(t, holder)
	hook, isQueued := signal(redlock.HookQueued)
	w := redlock.New(cs, key, redlock.WithNotifier(n), hook)
	done := lockAsync(ctx, w)
	await(t, isQueued, 10*time.Second, "waiter queued")
	before := make([][]redis.Z, len(admin))
	for i, c := range admin {
		before[i] = queued(t, c, key)
	}
	if err := late.Unlock(ctx); !errors.Is(err, redlock.ErrNotHeld) {
		t.Errorf("late Unlock() = %v; want ErrNotHeld", err)
	}
	for i, v := range holders(t, admin, key) {
		if v != holder.Token() {
			t.Errorf("node %d holds %q after the late release; want the holder's token", i, v)
		}
	}
	for i, c := range admin {
		if got := queued(t, c, key); !slices.Equal(got, before[i]) || len(got) != 1 {
			t.Errorf("node %d queue after the late release = %v; want %v, the one waiter", i, got, before[i])
		}
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	checkNoTrace(t, admin, key)
}

// TestHandoffMutualExclusion: 16 clients, each with its own connections
// and Notifier (as separate processes would have), take turns; no two are
// ever inside the critical section at once, and nothing is left behind.
func TestHandoffMutualExclusion(t *testing.T) {
	leakcheck.Guard(t)
	ctx := ctxFor(t)
	key := newKey(t)
	const clients, rounds = 16, 10
	var (
		mu                      sync.Mutex // guards the counters, not the lock's work
		inside, overlaps, total int
	)
	var g errgroup.Group
	for range clients {
		cs, n := withNotifier(t, addrs)
		m := redlock.New(cs, key, redlock.WithNotifier(n))
		g.Go(func() error {
			for range rounds {
				if err := m.Lock(ctx); err != nil {
					return err
				}
				mu.Lock()
				inside++
				if inside > 1 {
					overlaps++
				}
				total++
				mu.Unlock()
				mu.Lock()
				inside--
				mu.Unlock()
				if err := m.Unlock(ctx); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	if overlaps != 0 || total != clients*rounds {
		t.Fatalf("overlaps = %d, acquisitions = %d; want 0, %d", overlaps, total, clients*rounds)
	}
	checkNoTrace(t, admin, key)
}

// TestUncontendedCostsOneRoundEach counts the commands a Mutex sends to
// each node for uncontended Lock and Unlock, with and without a Notifier:
// one SET and one EVALSHA, in two parallel rounds.
func TestUncontendedCostsOneRoundEach(t *testing.T) {
	ctx := ctxFor(t)
	_, n := withNotifier(t, addrs)
	for _, s := range redlock.Scripts { // EVALSHA, not EVAL, from the first call
		for _, c := range admin {
			if err := s.Load(ctx, c).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tt := range []struct {
		name string
		opts []redlock.Option
	}{{"polling", nil}, {"notifier", []redlock.Option{redlock.WithNotifier(n)}}} {
		t.Run(tt.name, func(t *testing.T) {
			cs := clientsFor(t, addrs)
			var mu sync.Mutex
			sent := make([][]string, len(cs))
			for i, c := range cs {
				if err := c.(*redis.Client).Ping(ctx).Err(); err != nil { // dial first: its HELLO would count
					t.Fatal(err)
				}
				c.(*redis.Client).AddHook(countHook{func(name string) {
					if name == "hello" || name == "client" {
						return // a new connection's handshake: not the protocol's
					}
					mu.Lock()
					sent[i] = append(sent[i], name)
					mu.Unlock()
				}})
			}
			m := redlock.New(cs, newKey(t), tt.opts...)
			for range 3 {
				if err := m.Lock(ctx); err != nil {
					t.Fatal(err)
				}
				if err := m.Unlock(ctx); err != nil {
					t.Fatal(err)
				}
			}
			settle(t, m) // the last commands to the slowest nodes have ended
			mu.Lock()
			defer mu.Unlock()
			// One SET and one release per node per Lock and Unlock. A node
			// whose SET was still on its way when Unlock ran is released
			// when the SET ends, and not at all if that SET was refused (the
			// next Lock's SET can overtake the release of the one before).
			for i, got := range sent {
				sets, scripts := 0, 0
				for _, c := range got {
					switch c {
					case "set":
						sets++
					case "evalsha":
						scripts++
					default:
						t.Errorf("node %d got %q; want only SET and EVALSHA", i, c)
					}
				}
				if sets != 3 || scripts > 3 || scripts < 1 {
					t.Errorf("node %d got %v; want 3 SETs and up to 3 releases", i, got)
				}
			}
		})
	}
}

// countHook reports the name of every command a client sends.
type countHook struct{ seen func(string) }

func (countHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.seen(cmd.Name())
		return next(ctx, cmd)
	}
}
func (h countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestHandoffHookPoints lists the hook points a queued Lock passes.
func TestHandoffHookPoints(t *testing.T) {
	ctx := ctxFor(t)
	cs, n := withNotifier(t, addrs)
	key := newKey(t)
	holder := redlock.New(cs, key, redlock.WithNotifier(n))
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	settle(t, holder)
	var mu sync.Mutex
	var points []string
	queuedCh := make(chan struct{}, 1)
	w := redlock.New(cs, key, redlock.WithNotifier(n), redlock.WithHook(func(_ context.Context, p string) {
		mu.Lock()
		points = append(points, p)
		mu.Unlock()
		if p == redlock.HookQueued {
			queuedCh <- struct{}{}
		}
	}))
	done := lockAsync(ctx, w)
	await(t, queuedCh, 10*time.Second, "waiter queued")
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{redlock.HookRefused, redlock.HookQueued, redlock.HookAcquiredQuorum, redlock.HookBeforeRelease}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(points, want) {
		t.Errorf("hook points = %q; want %q", points, want)
	}
}

func TestNotifierBadInputAndClose(t *testing.T) {
	leakcheck.Guard(t)
	ctx := ctxFor(t)
	cs := clientsFor(t, addrs)
	rc := make([]redlock.NotifyClient, len(cs))
	for i, c := range cs {
		rc[i] = c.(*redis.Client)
	}
	var nilClient *redis.Client
	for _, tt := range []struct {
		name    string
		clients []redlock.NotifyClient
	}{
		{"no clients", nil},
		{"nil client", []redlock.NotifyClient{rc[0], nil, rc[2]}},
		{"typed nil client", []redlock.NotifyClient{rc[0], nilClient, rc[2]}},
		{"same node twice", []redlock.NotifyClient{rc[0], rc[1], rc[0]}},
	} {
		if n, err := redlock.NewNotifier(ctx, tt.clients); n != nil || !errors.Is(err, redlock.ErrInvalid) {
			t.Errorf("%s: NewNotifier() = %v, %v; want nil, ErrInvalid", tt.name, n, err)
		}
	}
	var unreachable []redlock.NotifyClient
	for _, port := range []string{"1", "2", "3"} {
		c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + port, DialerRetries: 1, MaxRetries: -1})
		defer c.Close()
		unreachable = append(unreachable, c)
	}
	if n, err := redlock.NewNotifier(ctx, unreachable); n != nil || !errors.Is(err, redlock.ErrQuorumUnreachable) {
		t.Errorf("NewNotifier() on unreachable servers = %v, %v; want nil, ErrQuorumUnreachable", n, err)
	}

	_, n := withNotifier(t, addrs)
	key := newKey(t)
	reversed := slices.Clone(cs)
	slices.Reverse(reversed)
	for name, m := range map[string]*redlock.Mutex{
		"fewer nodes":    redlock.New(cs[:3], key, redlock.WithNotifier(n)),
		"nodes reversed": redlock.New(reversed, key, redlock.WithNotifier(n)),
	} {
		if err := m.Lock(ctx); !errors.Is(err, redlock.ErrInvalid) {
			t.Errorf("%s: Lock() with a notifier for other nodes = %v; want ErrInvalid", name, err)
		}
	}

	holder := redlock.New(cs, key)
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	settle(t, holder)
	hook, isQueued := signal(redlock.HookQueued)
	w := redlock.New(cs, key, redlock.WithNotifier(n), hook)
	done := lockAsync(ctx, w)
	await(t, isQueued, 10*time.Second, "waiter queued")
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, redlock.ErrNotObtained) {
		t.Errorf("Lock() when its Notifier closes = %v; want ErrNotObtained", err)
	}
	if err := n.Close(); err != nil {
		t.Errorf("second Close() = %v; want nil", err)
	}
	if err := w.Lock(ctx); !errors.Is(err, redlock.ErrNotObtained) {
		t.Errorf("Lock() with a closed Notifier = %v; want ErrNotObtained", err)
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	checkNoTrace(t, admin, key)
}

// checkUntilIsConservative fails the test unless, on every node that holds
// m's token, the key outlives m.Until(): Until must err early.
func checkUntilIsConservative(t *testing.T, m *redlock.Mutex, key string) {
	t.Helper()
	until, tok := m.Until(), m.Token()
	held := 0
	for i, c := range admin {
		// GET and PTTL in one transaction: between two separate reads, a
		// release still in flight (Unlock returns at a majority) could hand
		// the node over, pairing the old holder's TTL with the new token.
		var get *redis.StringCmd
		var pttl *redis.DurationCmd
		_, err := c.TxPipelined(context.Background(), func(p redis.Pipeliner) error {
			get, pttl = p.Get(context.Background(), key), p.PTTL(context.Background(), key)
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatal(err)
		}
		expiry := time.Now().Add(pttl.Val()) // read after the reply: later than the truth
		if get.Val() != tok {
			continue
		}
		held++
		if until.After(expiry) {
			t.Errorf("node %d: key expires in %v but Until is %v from now: Until errs late", i, pttl.Val(), time.Until(until))
		}
	}
	if held < len(admin)/2+1 {
		t.Errorf("token on %d nodes; want a majority", held)
	}
}

// TestHandoffValidity: a lock handed over after a wait longer than its TTL
// still has most of its TTL (the waiter's rounds every ttl/4 keep the
// start of its lease recent), and its Until never errs late.
func TestHandoffValidity(t *testing.T) {
	leakcheck.Guard(t)
	ctx := ctxFor(t)
	cs, n := withNotifier(t, addrs)
	key := newKey(t)
	const ttl = 400 * time.Millisecond
	opts := []redlock.Option{redlock.WithNotifier(n), redlock.WithTTL(ttl), redlock.WithNodeTimeout(ttl / 2)}
	holder := redlock.New(cs, key, opts...)
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	settle(t, holder)
	hook, isQueued := signal(redlock.HookQueued)
	w := redlock.New(cs, key, append(opts, hook)...)
	done := lockAsync(ctx, w)
	await(t, isQueued, 10*time.Second, "waiter queued")
	for end := time.Now().Add(ttl + ttl/4); time.Now().Before(end); { // hold on for longer than a TTL
		if err := holder.Extend(ctx, ttl); err != nil {
			t.Fatalf("Extend() = %v", err)
		}
		time.Sleep(ttl / 8)
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The last round came at most ttl/4 before the hand-off (5x margin for
	// a loaded machine on the rest).
	if left := time.Until(w.Until()); left < ttl/2 {
		t.Errorf("after a wait longer than the TTL, the lock has %v left; want most of the %v TTL", left, ttl)
	}
	checkUntilIsConservative(t, w, key)
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	checkNoTrace(t, admin, key)
}

// TestHandoffPausedWaiterRefreshes: the waiter is handed a majority, then
// pauses at HookAcquiredQuorum until its keys have expired (Kleppmann's
// paused client, in the queue). It must not count those nodes: it runs
// one more round, which takes the free nodes afresh, and only then holds
// the lock, with an Until that does not err late.
func TestHandoffPausedWaiterRefreshes(t *testing.T) {
	leakcheck.Guard(t)
	ctx := ctxFor(t)
	cs, n := withNotifier(t, addrs)
	key := newKey(t)
	const ttl = 300 * time.Millisecond
	opts := []redlock.Option{redlock.WithNotifier(n), redlock.WithTTL(ttl), redlock.WithNodeTimeout(ttl / 2)}
	holder := redlock.New(cs, key, opts...)
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	settle(t, holder)
	var quorums, paused int
	queuedCh := make(chan struct{}, 1)
	w := redlock.New(cs, key, append(opts, redlock.WithHook(func(_ context.Context, p string) {
		switch p {
		case redlock.HookQueued:
			queuedCh <- struct{}{}
		case redlock.HookAcquiredQuorum:
			quorums++
			if paused == 0 {
				paused++
				waitGone(t, admin, key) // the pause outlasts the keys
			}
		}
	}))...)
	done := lockAsync(ctx, w)
	await(t, queuedCh, 10*time.Second, "waiter queued")
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if quorums != 2 {
		t.Errorf("HookAcquiredQuorum fired %d times; want 2 (the hand-off, then the fresh round)", quorums)
	}
	checkUntilIsConservative(t, w, key)
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	checkNoTrace(t, admin, key)
}

// TestNotifierWithAFrozenNode: one of five nodes is frozen (SIGSTOP) when
// the Notifier is made and while the lock is handed over. NewNotifier must
// not hang on it, and hand-off goes on with the other four; once the node
// resumes, everything closes cleanly.
func TestNotifierWithAFrozenNode(t *testing.T) {
	rig.RequireControl(t)
	leakcheck.Guard(t)
	ctx := ctxFor(t)
	nodes := startNodes(t, 5)
	cs := clientsFor(t, addrsOf(nodes))
	subs := make([]redlock.NotifyClient, len(cs))
	for i, c := range cs { // connect before the freeze: the pause hits open connections
		subs[i] = c.(*redis.Client)
		if err := subs[i].(*redis.Client).Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	frozen := nodes[4]
	if err := frozen.Pause(); err != nil {
		t.Fatal(err)
	}
	defer frozen.Resume()
	start := time.Now()
	n, err := redlock.NewNotifier(ctx, subs)
	if err != nil {
		t.Fatalf("NewNotifier() with 1 of 5 nodes frozen = %v; want nil", err)
	}
	defer n.Close()
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("NewNotifier() with a frozen node took %v; want about 250ms", took)
	}
	const key = "lock:frozen-notifier"
	opts := []redlock.Option{redlock.WithNotifier(n), redlock.WithNodeTimeout(150 * time.Millisecond)}
	holder := redlock.New(cs, key, opts...)
	if err := holder.Lock(ctx); err != nil {
		t.Fatalf("Lock() with 1 of 5 nodes frozen = %v; want nil", err)
	}
	hook, isQueued := signal(redlock.HookQueued)
	w := redlock.New(cs, key, append(opts, hook)...)
	done := lockAsync(ctx, w)
	await(t, isQueued, 10*time.Second, "waiter queued")
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Lock() of the waiter with 1 of 5 nodes frozen = %v; want nil", err)
	}
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := frozen.Resume(); err != nil {
		t.Fatal(err)
	}
	live := make([]*redis.Client, 4)
	for i := range live {
		live[i] = nodes[i].Client()
	}
	checkNoTrace(t, live, key)
}

// TestReleaseWithinValidityUndoesAForeignHandoff: a release within the
// validity skips the owner read on the nodes the Mutex knows it holds, and
// checks the value its SET ... GET replaced. When an operator deleted the
// key on every node and another client locked, A's release must leave the
// new holder's keys and the queues as they were.
func TestReleaseWithinValidityUndoesAForeignHandoff(t *testing.T) {
	leakcheck.Guard(t)
	ctx := ctxFor(t)
	cs, n := withNotifier(t, addrs)
	key := newKey(t)
	a := redlock.New(cs, key, redlock.WithNotifier(n))
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	settle(t, a)
	for _, c := range admin {
		c.Del(ctx, key) // an operator deletes the lock under A
	}
	b := redlock.New(cs, key, redlock.WithNotifier(n))
	if err := b.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	settle(t, b) // B holds all five nodes before W queues
	hook, queued := signal(redlock.HookQueued)
	w := redlock.New(cs, key, redlock.WithNotifier(n), hook)
	done := lockAsync(ctx, w)
	await(t, queued, 10*time.Second, "W queued")
	if !time.Now().Before(a.Until()) {
		t.Fatal("A's validity ran out; the test needs a release within it")
	}
	if err := a.Unlock(ctx); !errors.Is(err, redlock.ErrNotHeld) {
		t.Fatalf("A.Unlock after its keys were taken over = %v; want ErrNotHeld", err)
	}
	for i, c := range admin {
		if got, _ := c.Get(ctx, key).Result(); got != b.Token() {
			t.Fatalf("node %d holds %q after A's release; want B's token (hand-off undone)", i, got)
		}
	}
	if err := b.Unlock(ctx); err != nil { // B hands over to W
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
