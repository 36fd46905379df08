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

	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/internal/keyslot"
	"github.com/locklab/locklab/internal/leakcheck"
	"github.com/locklab/locklab/internal/locktest"
	"github.com/locklab/locklab/internal/rig"
	"github.com/locklab/locklab/redlock"
)

// withNotifier returns clients of the nodes at addrs and a Notifier on
// them, as one process would have; the Notifier is closed, then the
// clients, when the test ends.
func withNotifier(t *testing.T, addrs []string) ([]redlock.Client, *redlock.Notifier) {
	t.Helper()
	cs := clientsFor(t, addrs)
	return cs, notifierOn(t, cs)
}

// handoffOn begins a hand-off test on the shared servers: it checks for
// leaked goroutines when the test ends, and returns the test's context,
// clients of the servers with a Notifier on them, and a fresh key.
func handoffOn(t *testing.T) (context.Context, []redlock.Client, *redlock.Notifier, string) {
	t.Helper()
	leakcheck.Guard(t)
	ctx := locktest.Context(t)
	cs, n := withNotifier(t, addrs)
	return ctx, cs, n, newKey(t)
}

// notifierOn returns a Notifier on the go-redis clients cs, closed when the
// test ends.
func notifierOn(t *testing.T, cs []redlock.Client) *redlock.Notifier {
	t.Helper()
	ncs := make([]redlock.NotifyClient, len(cs))
	for i, c := range cs {
		ncs[i] = c.(*redis.Client)
		// Connect now: a first command that must dial can take longer
		// than the short node timeouts some tests use.
		if err := ncs[i].(*redis.Client).Ping(locktest.Context(t)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	n, err := redlock.NewNotifier(locktest.Context(t), ncs)
	if err != nil {
		t.Fatalf("NewNotifier() = %v", err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return n
}

// pointLog records the hook points a Mutex passes.
type pointLog struct {
	mu     sync.Mutex
	points []string
	queued chan struct{} // has a value once HookQueued is passed
}

// recordPoints returns a hook option that records every point in a
// pointLog.
func recordPoints() (redlock.Option, *pointLog) {
	l := &pointLog{queued: make(chan struct{}, 1)}
	return redlock.WithHook(func(_ context.Context, p string) {
		l.mu.Lock()
		l.points = append(l.points, p)
		l.mu.Unlock()
		if p == redlock.HookQueued {
			l.queued <- struct{}{}
		}
	}), l
}

// get returns the points recorded so far.
func (l *pointLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.points)
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

// queueWaiter starts the Lock of a new Mutex on cs and key, made with opts
// (a Notifier among them), waits until it has joined the queues, and
// returns the Mutex and its Lock's result channel.
func queueWaiter(t *testing.T, ctx context.Context, cs []redlock.Client, key string, opts ...redlock.Option) (*redlock.Mutex, <-chan error) {
	t.Helper()
	hook, queued := locktest.Signal(redlock.HookQueued)
	w := redlock.New(cs, key, append(slices.Clip(opts), redlock.WithHook(hook))...)
	return w, locktest.LockQueued(t, ctx, w, queued)
}

// mustLock locks m and waits for its SETs still in flight: waiters queued
// next find its token on every node.
func mustLock(t *testing.T, ctx context.Context, m *redlock.Mutex) {
	t.Helper()
	if err := m.Lock(ctx); err != nil {
		t.Fatalf("Lock() = %v", err)
	}
	settle(t, m)
}

// mustUnlock unlocks m, failing the test if Unlock fails.
func mustUnlock(t *testing.T, ctx context.Context, m *redlock.Mutex) {
	t.Helper()
	if err := m.Unlock(ctx); err != nil {
		t.Fatalf("Unlock() = %v", err)
	}
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

// TestHandoffWithANodeDown: one of five nodes is killed while waiters are
// queued. The other four hand the lock on as before, in order, without
// waiting for the waiters' periodic rounds.
func TestHandoffWithANodeDown(t *testing.T) {
	rig.RequireControl(t)
	leakcheck.Guard(t)
	ctx := locktest.Context(t)
	nodes := startNodes(t, 5)
	cs, n := withNotifier(t, addrsOf(nodes))
	const key, ttl = "lock:node-down", 10 * time.Second
	holder := redlock.New(cs, key, redlock.WithNotifier(n), redlock.WithTTL(ttl))
	mustLock(t, ctx, holder)
	var (
		mu    sync.Mutex
		order []int
	)
	var g errgroup.Group
	for i := range 2 {
		w, done := queueWaiter(t, ctx, cs, key, redlock.WithNotifier(n), redlock.WithTTL(ttl))
		g.Go(func() error {
			if err := <-done; err != nil {
				return err
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			return w.Unlock(ctx)
		})
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

// TestNodeOrderIsEachProcessOwn: three processes list the same five nodes
// in different orders, as processes configured one by one do. Hand-off
// must not care: every node queues the waiters and hands itself over on
// its own, ranking them alike, so the waiters get the lock in the order
// they came, handed over at once rather than found by their rounds every
// ttl/4. A design that picks nodes by their place in the list (one queue
// on "node 0", say) fails here: the processes would queue on different
// nodes, and nobody would hand the lock to anyone.
func TestNodeOrderIsEachProcessOwn(t *testing.T) {
	leakcheck.Guard(t)
	ctx := locktest.Context(t)
	key := newKey(t)
	const ttl = 10 * time.Second
	orders := [][]int{{0, 1, 2, 3, 4}, {4, 3, 2, 1, 0}, {2, 4, 1, 3, 0}}
	mutexes := make([]*redlock.Mutex, len(orders))
	var waits []<-chan error
	for p, order := range orders {
		as := make([]string, len(order))
		for i, j := range order {
			as[i] = addrs[j]
		}
		cs, n := withNotifier(t, as)
		if p == 0 {
			mutexes[p] = redlock.New(cs, key, redlock.WithNotifier(n), redlock.WithTTL(ttl))
			mustLock(t, ctx, mutexes[p])
			continue
		}
		var done <-chan error
		mutexes[p], done = queueWaiter(t, ctx, cs, key, redlock.WithNotifier(n), redlock.WithTTL(ttl))
		waits = append(waits, done)
	}
	start := time.Now()
	mustUnlock(t, ctx, mutexes[0])
	for p, done := range waits {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("waiter %d: Lock() = %v", p+1, err)
			}
		case <-time.After(ttl / 8):
			t.Fatalf("waiter %d was not handed the lock within %v (its own round comes every %v)", p+1, ttl/8, ttl/4)
		}
		for q, other := range waits[p+1:] {
			select {
			case err := <-other:
				t.Fatalf("waiter %d got the lock (%v) while waiter %d, queued before it, held it", p+q+2, err, p+1)
			default:
			}
		}
		mustUnlock(t, ctx, mutexes[p+1])
	}
	if took := time.Since(start); took > ttl/8 {
		t.Errorf("two hand-offs took %v; want well under the waiters' round every %v", took, ttl/4)
	}
	checkNoTrace(t, admin, key)
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
	ctx, cs, n, key := handoffOn(t)
	const ttl = 10 * time.Second
	holder := redlock.New(cs, key, redlock.WithNotifier(n), redlock.WithTTL(ttl))
	mustLock(t, ctx, holder)
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
		m, done := queueWaiter(t, ctx, cs, key, redlock.WithNotifier(n), redlock.WithTTL(ttl))
		g.Go(func() error {
			if err := <-done; err != nil {
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
		tok := lastQueued(t, key)
		for _, i := range w.missed {
			if err := admin[i].ZRem(ctx, redlock.QueueKey(key), tok).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	start := time.Now()
	mustUnlock(t, ctx, holder)
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

// TestGivingUpPassesTheLockOn: a waiter gives up at the very moment the
// lock is handed to it. The release script run as it leaves (dequeue flag)
// must pass each node on to the next live waiter, not drop or keep it.
func TestGivingUpPassesTheLockOn(t *testing.T) {
	ctx := locktest.Context(t)
	cs, n := withNotifier(t, addrs)
	key := newKey(t)
	const quitter = "quitternotifier.60000.quitter.1" // just handed the lock on every node
	for _, c := range admin {
		if err := c.Set(ctx, key, quitter, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	next, done := queueWaiter(t, ctx, cs, key, redlock.WithNotifier(n))
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
	mustUnlock(t, ctx, next)
	checkNoTrace(t, admin, key)
}

// TestLateReleaseLeavesTheNextHolderAlone: a holder whose lease expired
// unlocks after another client took the lock and a third queued. The late
// release must touch neither the new holder's keys nor the queue.
func TestLateReleaseLeavesTheNextHolderAlone(t *testing.T) {
	ctx, cs, n, key := handoffOn(t)
	late := redlock.New(cs, key, redlock.WithTTL(100*time.Millisecond), redlock.WithNodeTimeout(50*time.Millisecond))
	if err := lockWithin(ctx, late); err != nil {
		t.Fatal(err)
	}
	waitGone(t, admin, key)
	holder := redlock.New(cs, key, redlock.WithNotifier(n))
	mustLock(t, ctx, holder)
	w, done := queueWaiter(t, ctx, cs, key, redlock.WithNotifier(n))
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
	mustUnlock(t, ctx, holder)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mustUnlock(t, ctx, w)
	checkNoTrace(t, admin, key)
}

// TestUncontendedCostsOneRoundEach counts the commands a Mutex sends to
// each node for uncontended Lock and Unlock, with and without a Notifier:
// one SET and one EVALSHA, in two parallel rounds.
func TestUncontendedCostsOneRoundEach(t *testing.T) {
	ctx := locktest.Context(t)
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
				rig.OnCommand(c.(*redis.Client), func(name string) {
					if name == "hello" || name == "client" {
						return // a new connection's handshake: not the protocol's
					}
					mu.Lock()
					sent[i] = append(sent[i], name)
					mu.Unlock()
				})
			}
			m := redlock.New(cs, newKey(t), tt.opts...)
			for range 3 {
				if err := m.Lock(ctx); err != nil {
					t.Fatal(err)
				}
				mustUnlock(t, ctx, m)
			}
			settle(t, m) // the last commands to the slowest nodes have ended
			mu.Lock()
			defer mu.Unlock()
			// One script (take.lua) and one release per node per Lock and
			// Unlock. A node whose acquisition was still on its way when
			// Unlock ran is released when it ends, and not at all if it
			// was refused (the next Lock's can overtake the release of the
			// one before): 3 takes and 1 to 3 releases, no SET.
			for i, got := range sent {
				scripts := 0
				for _, c := range got {
					switch c {
					case "evalsha":
						scripts++
					default:
						t.Errorf("node %d got %q; want only EVALSHA", i, c)
					}
				}
				if scripts < 4 || scripts > 6 {
					t.Errorf("node %d got %v; want 3 acquisitions and 1 to 3 releases", i, got)
				}
			}
		})
	}
}

// TestBurstPaysOneSetRound: a Lock that starts while another Lock of the
// same Notifier on the same key is still in its SET round joins the queues
// without a SET round of its own (it would be refused, or race the other):
// a burst of Locks in one process pays one SET round, not one each. A is
// parked at HookRefused, after its SET round and before it queues; B,
// started then, must not pass HookRefused. (Before B counted A only once A
// was queued, B made a SET round of its own: 1000 Locks at once made about
// 1000 SET rounds, and TestThousandWaitersAtOnce/redlock took 2.4-3.7x
// correct's time rather than 1.7-3.3x.)
func TestBurstPaysOneSetRound(t *testing.T) {
	ctx := locktest.Context(t)
	cs, n := withNotifier(t, addrs)
	key := newKey(t)
	holder := redlock.New(clientsFor(t, addrs), key)
	mustLock(t, ctx, holder)

	parked, resume, aQueued := make(chan struct{}), make(chan struct{}), make(chan struct{})
	a := redlock.New(cs, key, redlock.WithNotifier(n), redlock.WithHook(func(_ context.Context, p string) {
		switch p {
		case redlock.HookRefused:
			close(parked)
			<-resume
		case redlock.HookQueued:
			close(aQueued)
		}
	}))
	aDone := lockAsync(ctx, a)
	await(t, parked, 10*time.Second, "A refused")

	hook, log := recordPoints()
	b := redlock.New(cs, key, redlock.WithNotifier(n), hook)
	bDone := locktest.LockQueued(t, ctx, b, log.queued)
	close(resume)
	await(t, aQueued, 10*time.Second, "A queued") // first: its score is the better
	if points := log.get(); slices.Contains(points, redlock.HookRefused) {
		t.Errorf("B's hook points = %q: it made a SET round of its own while A, of its Notifier, was in for the key", points)
	}

	mustUnlock(t, ctx, holder)
	for _, w := range []struct {
		m    *redlock.Mutex
		done <-chan error
	}{{a, aDone}, {b, bDone}} {
		if err := <-w.done; err != nil {
			t.Fatal(err)
		}
		mustUnlock(t, ctx, w.m)
	}
}

// TestRoundEndsAtAMajority: a waiter's round is on its way to a node that
// does not answer (its command held in the network) when the holder lets
// go, and the other four nodes hand the lock to the waiter. The waiter
// must take the lock then, not once the slow node answers or its per-node
// timeout ends. (Before, a round waited for every node: in a burst of 1000
// Locks, waiters handed a majority waited hundreds of milliseconds for a
// node slow to answer; here Lock took the whole 5s per-node timeout.)
func TestRoundEndsAtAMajority(t *testing.T) {
	ctx := locktest.Context(t)
	key := newKey(t)
	for _, c := range admin {
		if err := redlock.Scripts["acquire"].Load(ctx, c).Err(); err != nil {
			t.Fatal(err)
		}
	}
	ps, cs, _ := behindProxies(t, addrs, rig.ClientOptions)
	n := notifierOn(t, cs)
	holder := redlock.New(clientsFor(t, addrs), key)
	mustLock(t, ctx, holder)

	const nodeTimeout = 5 * time.Second
	slow := ps[len(ps)-1].Hold(faultproxy.Match{Script: redlock.Scripts["acquire"].Hash(), Key: key}, 1)
	w := redlock.New(cs, key, redlock.WithNotifier(n), redlock.WithTTL(time.Minute), redlock.WithNodeTimeout(nodeTimeout))
	start := time.Now()
	done := lockAsync(ctx, w)
	if err := slow.Wait(ctx, 1); err != nil {
		t.Fatal(err)
	}
	for i, c := range admin[:len(admin)-1] {
		eventually(t, fmt.Sprintf("waiter queued on node %d", i), func() (bool, string) {
			z := queued(t, c, key)
			return len(z) == 1, fmt.Sprint(z)
		})
	}
	mustUnlock(t, ctx, holder)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(nodeTimeout / 5):
		t.Errorf("Lock() had not returned %v after it began (the holder let go at once); want it at the hand-offs, not at the slow node's answer", time.Since(start))
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	slow.Release()
	mustUnlock(t, ctx, w)
	checkNoTrace(t, admin, key)
}

// TestRoundKeepsANodeHandedOnTheWay runs acquire.lua on one node that
// holds the waiter W's previous token, with a better live waiter X queued
// there. A node W knew it held (a split; ARGV[5] "0") goes to X; a node
// handed to W while its round was on the way ("1") is W's: the release
// chose W as the best queued there, and X joined since. (Given to X, as
// before, it broke up majorities in the making: in a burst of 1000 Locks a
// waiter handed all three nodes lost two to late joiners in its next
// round, and nobody held the lock for 100-300ms.)
func TestRoundKeepsANodeHandedOnTheWay(t *testing.T) {
	ctx := locktest.Context(t)
	c := admin[0]
	ps := c.Subscribe(ctx, "redlock:w:x") // X is live: its Notifier listens
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	const wOld, wNew, x = "w.60000.r.1", "w.60000.r.2", "x.60000.r.1"
	for _, tt := range []struct {
		keep, want string
		code       int64
	}{{"0", x, 0}, {"1", wNew, 1}} {
		key := newKey(t)
		keys := []string{key, redlock.QueueKey(key), keyslot.Receipt(keyslot.Base(key), wNew)}
		if err := c.Set(ctx, key, wOld, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.ZAdd(ctx, redlock.QueueKey(key), redis.Z{Score: 100, Member: x}).Err(); err != nil {
			t.Fatal(err)
		}
		code, err := redlock.Scripts["acquire"].Run(ctx, c, keys, wNew, 200, 60000, wOld, tt.keep).Int64()
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Get(ctx, key).Val(); got != tt.want || code != tt.code {
			t.Errorf("ARGV[5] %q: acquire.lua = %d, key holds %q; want %d, %q", tt.keep, code, got, tt.code, tt.want)
		}
		if tt.keep == "1" { // its reply lost, go-redis sends it again: recognised as ours
			again, err := redlock.Scripts["acquire"].Run(ctx, c, keys, wNew, 200, 60000, wOld, tt.keep).Int64()
			if got := c.Get(ctx, key).Val(); err != nil || again != 2 || got != wNew {
				t.Errorf("acquire.lua sent again = %d, %v, key holds %q; want 2, nil, %q", again, err, got, wNew)
			}
		}
	}
}

// TestHandoffHookPoints lists the hook points a queued Lock passes.
func TestHandoffHookPoints(t *testing.T) {
	ctx := locktest.Context(t)
	cs, n := withNotifier(t, addrs)
	key := newKey(t)
	holder := redlock.New(cs, key, redlock.WithNotifier(n))
	mustLock(t, ctx, holder)
	hook, log := recordPoints()
	w := redlock.New(cs, key, redlock.WithNotifier(n), hook)
	done := locktest.LockQueued(t, ctx, w, log.queued)
	mustUnlock(t, ctx, holder)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mustUnlock(t, ctx, w)
	want := []string{redlock.HookRefused, redlock.HookQueued, redlock.HookAcquiredQuorum, redlock.HookBeforeRelease}
	if points := log.get(); !slices.Equal(points, want) {
		t.Errorf("hook points = %q; want %q", points, want)
	}
}

// TestNotifierBadInput: NewNotifier refuses no clients, nil ones and a
// node given twice, and fails when it reaches no quorum; a Mutex whose
// Notifier is for other nodes is refused. (What a Notifier's Close does to
// its waiters is internal/contract's TestNotifierClose.)
func TestNotifierBadInput(t *testing.T) {
	leakcheck.Guard(t)
	ctx := locktest.Context(t)
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
	ctx, cs, n, key := handoffOn(t)
	const ttl = 400 * time.Millisecond
	opts := []redlock.Option{redlock.WithNotifier(n), redlock.WithTTL(ttl), redlock.WithNodeTimeout(ttl / 2)}
	holder := redlock.New(cs, key, opts...)
	mustLock(t, ctx, holder)
	w, done := queueWaiter(t, ctx, cs, key, opts...)
	for end := time.Now().Add(ttl + ttl/4); time.Now().Before(end); { // hold on for longer than a TTL
		if err := holder.Extend(ctx, ttl); err != nil {
			t.Fatalf("Extend() = %v", err)
		}
		time.Sleep(ttl / 8)
	}
	mustUnlock(t, ctx, holder)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The last round came at most ttl/4 before the hand-off (5x margin for
	// a loaded machine on the rest).
	if left := time.Until(w.Until()); left < ttl/2 {
		t.Errorf("after a wait longer than the TTL, the lock has %v left; want most of the %v TTL", left, ttl)
	}
	checkUntilIsConservative(t, w, key)
	mustUnlock(t, ctx, w)
	checkNoTrace(t, admin, key)
}

// TestHandoffPausedWaiterRefreshes: the waiter is handed a majority, then
// pauses at HookAcquiredQuorum until its keys have expired (Kleppmann's
// paused client, in the queue). It must not count those nodes: it runs
// one more round, which takes the free nodes afresh, and only then holds
// the lock, with an Until that does not err late.
func TestHandoffPausedWaiterRefreshes(t *testing.T) {
	ctx, cs, n, key := handoffOn(t)
	const ttl = 300 * time.Millisecond
	opts := []redlock.Option{redlock.WithNotifier(n), redlock.WithTTL(ttl), redlock.WithNodeTimeout(ttl / 2)}
	holder := redlock.New(cs, key, opts...)
	mustLock(t, ctx, holder)
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
	done := locktest.LockQueued(t, ctx, w, queuedCh)
	mustUnlock(t, ctx, holder)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if quorums != 2 {
		t.Errorf("HookAcquiredQuorum fired %d times; want 2 (the hand-off, then the fresh round)", quorums)
	}
	checkUntilIsConservative(t, w, key)
	mustUnlock(t, ctx, w)
	checkNoTrace(t, admin, key)
}

// TestNotifierWithAFrozenNode: one of five nodes is frozen (SIGSTOP) when
// the Notifier is made and while the lock is handed over. NewNotifier must
// not hang on it, and hand-off goes on with the other four; once the node
// resumes, everything closes cleanly.
func TestNotifierWithAFrozenNode(t *testing.T) {
	rig.RequireControl(t)
	leakcheck.Guard(t)
	ctx := locktest.Context(t)
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
	w, done := queueWaiter(t, ctx, cs, key, opts...)
	mustUnlock(t, ctx, holder)
	if err := <-done; err != nil {
		t.Fatalf("Lock() of the waiter with 1 of 5 nodes frozen = %v; want nil", err)
	}
	mustUnlock(t, ctx, w)
	if err := frozen.Resume(); err != nil {
		t.Fatal(err)
	}
	live := make([]*redis.Client, 4)
	for i := range live {
		live[i] = nodes[i].Client()
	}
	checkNoTrace(t, live, key)
}
