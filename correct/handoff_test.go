package correct_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/locklab/locklab/correct"
	"github.com/locklab/locklab/internal/leakcheck"
	"github.com/locklab/locklab/internal/observetest"
)

// newNotifier returns a Notifier on its own client, closed in Cleanup.
func newNotifier(t *testing.T) (*correct.Notifier, *redis.Client) {
	t.Helper()
	c := newClient(t)
	n, err := correct.NewNotifier(testContext(t), c)
	if err != nil {
		t.Fatalf("NewNotifier = %v", err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return n, c
}

// queueOf is the wait queue's key for key (see New).
func queueOf(key string) string { return "{" + key + "}:q" }

// checkQueueGone fails the test if the lock's queue still exists.
func checkQueueGone(t *testing.T, c *redis.Client, key string) {
	t.Helper()
	if n, err := c.Exists(context.Background(), queueOf(key)).Result(); err != nil || n != 0 {
		t.Errorf("queue %s left behind (EXISTS = %d, %v)", queueOf(key), n, err)
	}
}

// signal returns a hook that reports each time point is reached.
func signal(point string) (correct.Option, <-chan struct{}) {
	ch := make(chan struct{}, 64)
	return correct.WithHook(func(_ context.Context, p string) {
		if p == point {
			ch <- struct{}{}
		}
	}), ch
}

// TestHandoffIsFirstComeFirstServed queues five waiters in a known order
// (each starts once the one before has queued) and checks they get the
// lock in that order, each handed it by the previous holder.
func TestHandoffIsFirstComeFirstServed(t *testing.T) {
	leakcheck.Guard(t)
	ctx := testContext(t)
	n, c := newNotifier(t)
	key := newKey(t)
	holder := correct.New(c, key, correct.WithNotifier(n))
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		order []int
	)
	var g errgroup.Group
	for i := range 5 {
		hook, queued := signal(correct.HookQueued)
		w := correct.New(c, key, correct.WithNotifier(n), hook)
		g.Go(func() error {
			if err := w.Lock(ctx); err != nil {
				return err
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			return w.Unlock(ctx)
		})
		<-queued // the next waiter starts after this one joined the queue
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	for i, got := range order {
		if got != i {
			t.Fatalf("waiters got the lock in order %v; want 0 1 2 3 4", order)
		}
	}
	checkQueueGone(t, c, key)
}

// TestHandoffSkipsADeadWaiter puts a dead waiter's token at the head of
// the queue (its process is gone: nobody listens on its channel). The
// release must pass it by at once instead of leaving the lock with it for
// a whole TTL.
func TestHandoffSkipsADeadWaiter(t *testing.T) {
	leakcheck.Guard(t)
	ctx := testContext(t)
	n, c := newNotifier(t)
	key := newKey(t)
	const ttl = 10 * time.Second // a stall would last this long
	holder := correct.New(c, key, correct.WithNotifier(n), correct.WithTTL(ttl))
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.RPush(ctx, queueOf(key), "deadnotifier.10000.deadtoken").Err(); err != nil {
		t.Fatal(err)
	}
	hook, queued := signal(correct.HookQueued)
	w := correct.New(c, key, correct.WithNotifier(n), correct.WithTTL(ttl), hook)
	done := make(chan error, 1)
	go func() { done <- w.Lock(ctx) }()
	<-queued
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(ttl / 8): // well before the waiter's own check at ttl/4
		t.Fatal("the live waiter did not get the lock: the release left it with the dead waiter")
	}
	if got, _ := c.Get(ctx, key).Result(); got != w.Token() {
		t.Errorf("key holds %q; want the live waiter's token", got)
	}
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	checkQueueGone(t, c, key)
}

// TestHandoffRecoversFromADeadHolder: the holder never unlocks (its process
// died). The queued waiters get the lock once the key expires, through
// their own checks, within the TTL plus a quarter TTL.
func TestHandoffRecoversFromADeadHolder(t *testing.T) {
	leakcheck.Guard(t)
	ctx := testContext(t)
	n, c := newNotifier(t)
	key := newKey(t)
	const ttl = 200 * time.Millisecond
	dead := correct.New(c, key, correct.WithTTL(ttl)) // never unlocked
	if ok, err := dead.TryLock(ctx); !ok || err != nil {
		t.Fatalf("TryLock = %v, %v", ok, err)
	}
	start := time.Now()
	var g errgroup.Group
	for range 3 {
		w := correct.New(c, key, correct.WithNotifier(n), correct.WithTTL(ttl))
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
	// Three leases can pass at most: the dead one, then the waiters' own
	// checks every ttl/4. 5x margin for a loaded machine.
	if took := time.Since(start); took > 5*(ttl+ttl/4) {
		t.Errorf("waiters took %v to get past a dead holder; want about %v", took, ttl+ttl/4)
	}
	checkQueueGone(t, c, key)
}

// TestHandoffNoLostWakeup forces the lost wake-up race: the waiter is
// refused by SET NX, and before it joins the queue the holder releases
// with nobody queued, so no hand-off message will ever come. The waiter
// must still get the lock at once, not after its periodic check.
func TestHandoffNoLostWakeup(t *testing.T) {
	leakcheck.Guard(t)
	ctx := testContext(t)
	n, c := newNotifier(t)
	key := newKey(t)
	const ttl = 10 * time.Second
	holder := correct.New(c, key, correct.WithTTL(ttl))
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	refused, release := make(chan struct{}), make(chan struct{})
	w := correct.New(c, key, correct.WithNotifier(n), correct.WithTTL(ttl), correct.WithHook(func(_ context.Context, p string) {
		if p == correct.HookRefused {
			close(refused)
			<-release
		}
	}))
	done := make(chan error, 1)
	go func() { done <- w.Lock(ctx) }()
	<-refused
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
	checkQueueGone(t, c, key)
}

// TestHandoffWaiterGivesUp: a queued waiter whose ctx ends leaves the
// queue and returns ErrNotObtained joined with the ctx error; the holder
// and the next waiter are unaffected.
func TestHandoffWaiterGivesUp(t *testing.T) {
	leakcheck.Guard(t)
	ctx := testContext(t)
	n, c := newNotifier(t)
	key := newKey(t)
	holder := correct.New(c, key, correct.WithNotifier(n))
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	hook, queued := signal(correct.HookQueued)
	quitter := correct.New(c, key, correct.WithNotifier(n), hook)
	qctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- quitter.Lock(qctx) }()
	<-queued
	cancel()
	err := <-done
	if !errors.Is(err, correct.ErrNotObtained) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock after cancel = %v; want ErrNotObtained joined with context.Canceled", err)
	}
	if l, _ := c.LLen(ctx, queueOf(key)).Result(); l != 0 {
		t.Errorf("queue length after the waiter gave up = %d; want 0", l)
	}
	if got, _ := c.Get(ctx, key).Result(); got != holder.Token() {
		t.Errorf("key holds %q; want the holder's token", got)
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	checkQueueGone(t, c, key)
}

// TestAbandonPassesTheLockOn: a waiter gives up at the very moment the lock
// is handed to it. The release script run on its behalf (dequeue flag) must
// pass the lock on to the next live waiter, not drop it or keep it.
func TestAbandonPassesTheLockOn(t *testing.T) {
	ctx := testContext(t)
	n, c := newNotifier(t)
	key := newKey(t)
	hook, queued := signal(correct.HookQueued)
	next := correct.New(c, key, correct.WithNotifier(n), hook)
	// The lock was just handed to the quitter's token; next is queued.
	quitter := "quitter.8000.token"
	if err := c.Set(ctx, key, quitter, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- next.Lock(ctx) }()
	<-queued
	s := correct.Scripts["release.lua"].Script
	keys := []string{key, queueOf(key), "{" + key + "}:r:" + quitter}
	r, err := s.Run(ctx, c, keys, quitter, "correct:w:", "1", correct.ReceiptMS).Int64()
	if err != nil || r != 2 {
		t.Fatalf("release.lua (abandon) = %d, %v; want 2 (handed on)", r, err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := next.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	checkQueueGone(t, c, key)
}

// TestHandoffMutualExclusion: 16 clients, each with its own connection
// pool and Notifier (as separate processes would have), take turns; a
// non-atomic counter inside the critical section must never be seen by
// two at once.
func TestHandoffMutualExclusion(t *testing.T) {
	leakcheck.Guard(t)
	ctx := testContext(t)
	key := newKey(t)
	var inside, overlaps, total int64
	var mu sync.Mutex // guards nothing the lock should: only the counters' reads
	var g errgroup.Group
	for range 16 {
		n, c := newNotifier(t)
		m := correct.New(c, key, correct.WithNotifier(n))
		g.Go(func() error {
			for range 10 {
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
	if overlaps != 0 || total != 160 {
		t.Fatalf("overlaps = %d, acquisitions = %d; want 0, 160", overlaps, total)
	}
	checkQueueGone(t, newClient(t), key)
}

// TestHandoffUncontendedCostsTwoRoundTrips counts the commands a Mutex
// with a Notifier sends for an uncontended Lock and Unlock: SET and one
// EVALSHA, as without a Notifier.
func TestHandoffUncontendedCostsTwoRoundTrips(t *testing.T) {
	ctx := testContext(t)
	n, _ := newNotifier(t)
	c := newClient(t)
	var cmds []string
	var mu sync.Mutex
	c.AddHook(countHook{func(name string) { mu.Lock(); cmds = append(cmds, name); mu.Unlock() }})
	m := correct.New(c, newKey(t), correct.WithNotifier(n))
	// A first round loads the scripts and runs the server check.
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	cmds = nil
	mu.Unlock()
	for range 3 {
		if err := m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := m.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(cmds) != 6 {
		t.Fatalf("3 uncontended Lock+Unlock sent %v; want SET, EVALSHA three times", cmds)
	}
	for i, c := range cmds {
		if want := []string{"set", "evalsha"}[i%2]; c != want {
			t.Fatalf("command %d = %s; want %s (all: %v)", i, c, want, cmds)
		}
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

func TestNotifierBadInputAndClose(t *testing.T) {
	leakcheck.Guard(t)
	ctx := testContext(t)
	if _, err := correct.NewNotifier(ctx, nil); !errors.Is(err, correct.ErrInvalid) {
		t.Errorf("NewNotifier(nil) = %v; want ErrInvalid", err)
	}
	var nilClient *redis.Client
	if _, err := correct.NewNotifier(ctx, nilClient); !errors.Is(err, correct.ErrInvalid) {
		t.Errorf("NewNotifier(nil *redis.Client) = %v; want ErrInvalid", err)
	}
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialerRetries: 1, MaxRetries: -1})
	defer dead.Close()
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if _, err := correct.NewNotifier(short, dead); err == nil {
		t.Error("NewNotifier on an unreachable server = nil error")
	}

	n, c := newNotifier(t)
	key := newKey(t)
	holder := correct.New(c, key)
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	hook, queued := signal(correct.HookQueued)
	w := correct.New(c, key, correct.WithNotifier(n), hook)
	done := make(chan error, 1)
	go func() { done <- w.Lock(ctx) }()
	<-queued
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, correct.ErrNotObtained) {
		t.Errorf("Lock when its Notifier closes = %v; want ErrNotObtained", err)
	}
	if err := n.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if err := w.Lock(ctx); !errors.Is(err, correct.ErrNotObtained) {
		t.Errorf("Lock with a closed Notifier = %v; want ErrNotObtained", err)
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	checkQueueGone(t, c, key)
}

// TestObserver sees what a Mutex reports: the wait of an acquisition, the
// hold time of a release, a give-up with its cause, and a loss found by
// Unlock.
func TestObserver(t *testing.T) {
	ctx := testContext(t)
	c := newClient(t)
	key := newKey(t)
	rec := observetest.New()
	obs := correct.WithObserver(rec.Observe)
	a := correct.New(c, key, obs)
	b := correct.New(c, key, obs, correct.WithTTL(20*time.Millisecond))
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	lockStart := time.Now()
	if err := b.Lock(short); !errors.Is(err, correct.ErrNotObtained) {
		t.Fatalf("B.Lock = %v; want ErrNotObtained", err)
	}
	lockTook := time.Since(lockStart)
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	waitGone(t, c, key) // B's 20ms lease runs out
	if err := b.Unlock(ctx); !errors.Is(err, correct.ErrNotHeld) {
		t.Fatalf("B.Unlock after expiry = %v; want ErrNotHeld", err)
	}
	events := rec.Expect(t, "all", "correct", key, "acquired gave-up released acquired lost")
	if e := events[1]; e.Wait <= 0 || e.Wait > lockTook || !errors.Is(e.Err, context.DeadlineExceeded) {
		t.Errorf("gave-up event = %+v; want 0 < Wait <= %v (the Lock call) and a deadline error", e, lockTook)
	}
	if e := events[4]; e.Held < 20*time.Millisecond || !errors.Is(e.Err, correct.ErrNotHeld) {
		t.Errorf("lost event = %+v; want Held >= the 20ms lease and ErrNotHeld", e)
	}
}

// TestReleaseOfAForeignKeyChangesNothing: someone outside the protocol
// deleted the key (an operator's DEL) and another client took the lock.
// A's release, within what A thinks is its lease, must leave the new
// holder's lock, its TTL and the queue exactly as they were. (An earlier
// release skipped the owner read within the lease and undid a mismatch
// after its SET ... GET: sent twice, that undo gave the new holder's key
// the next waiter's TTL.)
func TestReleaseOfAForeignKeyChangesNothing(t *testing.T) {
	leakcheck.Guard(t)
	ctx := testContext(t)
	n, c := newNotifier(t)
	key := newKey(t)
	a := correct.New(c, key, correct.WithNotifier(n))
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	c.Del(ctx, key) // an operator deletes the lock under A
	b := correct.New(c, key, correct.WithNotifier(n))
	if err := b.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	hook, queued := signal(correct.HookQueued)
	w := correct.New(c, key, correct.WithNotifier(n), hook)
	done := make(chan error, 1)
	go func() { done <- w.Lock(ctx) }()
	<-queued
	if !time.Now().Before(a.Until()) {
		t.Fatal("A's lease ran out; the test needs a release within it")
	}
	if err := a.Unlock(ctx); !errors.Is(err, correct.ErrNotHeld) {
		t.Fatalf("A.Unlock after its key was taken over = %v; want ErrNotHeld", err)
	}
	if got, _ := c.Get(ctx, key).Result(); got != b.Token() {
		t.Fatalf("key holds %q after A's release; want B's token", got)
	}
	if l, _ := c.LLen(ctx, queueOf(key)).Result(); l != 1 {
		t.Fatalf("queue length = %d after A's release; want the waiter still queued", l)
	}
	if err := b.Unlock(ctx); err != nil { // B hands over to the waiter
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	checkQueueGone(t, c, key)
}

// TestHandoffGivesTheWaitersOwnTTL: a holder with a long TTL hands over to
// a waiter with a short one. The key must get the waiter's TTL, the one its
// Until counts with, or Until would err late.
func TestHandoffGivesTheWaitersOwnTTL(t *testing.T) {
	leakcheck.Guard(t)
	ctx := testContext(t)
	n, c := newNotifier(t)
	key := newKey(t)
	holder := correct.New(c, key, correct.WithNotifier(n), correct.WithTTL(time.Minute))
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	const short = 3 * time.Second
	hook, queued := signal(correct.HookQueued)
	w := correct.New(c, key, correct.WithNotifier(n), correct.WithTTL(short), hook)
	done := make(chan error, 1)
	go func() { done <- w.Lock(ctx) }()
	<-queued
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	pttl, err := c.PTTL(ctx, key).Result()
	if err != nil || pttl > short {
		t.Fatalf("PTTL after hand-off = %v, %v; want at most the waiter's %v", pttl, err, short)
	}
	if until := time.Until(w.Until()); until > pttl+50*time.Millisecond {
		t.Errorf("waiter's Until is %v away but the key expires in %v: Until errs late", until, pttl)
	}
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	checkQueueGone(t, c, key)
}
