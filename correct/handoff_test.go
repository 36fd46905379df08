package correct_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/correct"
	"github.com/locklab/locklab/internal/leakcheck"
	"github.com/locklab/locklab/internal/locktest"
	"github.com/locklab/locklab/internal/observetest"
	"github.com/locklab/locklab/internal/rig"
)

// newNotifier returns a Notifier on its own client, closed in Cleanup.
func newNotifier(t *testing.T) (*correct.Notifier, *redis.Client) {
	t.Helper()
	c := newClient(t)
	return notifierOn(t, c), c
}

// notifierOn returns a Notifier on c, closed in Cleanup.
func notifierOn(t *testing.T, c *redis.Client) *correct.Notifier {
	t.Helper()
	n, err := correct.NewNotifier(testContext(t), c)
	if err != nil {
		t.Fatalf("NewNotifier = %v", err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return n
}

// queueWaiter starts the Lock of a new Mutex on c and key, made with opts
// (a Notifier among them), waits until it has joined the queue, and
// returns the Mutex and its Lock's result channel.
func queueWaiter(t *testing.T, ctx context.Context, c correct.Client, key string, opts ...correct.Option) (*correct.Mutex, <-chan error) {
	t.Helper()
	hook, queued := locktest.Signal(correct.HookQueued)
	w := correct.New(c, key, append(slices.Clip(opts), correct.WithHook(hook))...)
	return w, locktest.LockQueued(t, ctx, w, queued)
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

// TestAbandonPassesTheLockOn: a waiter gives up at the very moment the lock
// is handed to it. The release script run on its behalf (dequeue flag) must
// pass the lock on to the next live waiter, not drop it or keep it.
func TestAbandonPassesTheLockOn(t *testing.T) {
	ctx := testContext(t)
	n, c := newNotifier(t)
	key := newKey(t)
	// The lock was just handed to the quitter's token; next is queued.
	quitter := "quitter.8000.token"
	if err := c.Set(ctx, key, quitter, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	next, done := queueWaiter(t, ctx, c, key, correct.WithNotifier(n))
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

// TestHandoffUncontendedCostsTwoRoundTrips counts the commands a Mutex
// with a Notifier sends for an uncontended Lock and Unlock: SET and one
// EVALSHA, as without a Notifier.
func TestHandoffUncontendedCostsTwoRoundTrips(t *testing.T) {
	ctx := testContext(t)
	n, _ := newNotifier(t)
	c := newClient(t)
	var cmds []string
	var mu sync.Mutex
	rig.OnCommand(c, func(name string) { mu.Lock(); cmds = append(cmds, name); mu.Unlock() })
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
		t.Fatalf("3 uncontended Lock+Unlock sent %v; want EVALSHA (take.lua), EVALSHA (release.lua) three times", cmds)
	}
	for i, c := range cmds {
		if want := "evalsha"; c != want {
			t.Fatalf("command %d = %s; want %s (all: %v)", i, c, want, cmds)
		}
	}
}

// TestNotifierBadInput: NewNotifier refuses a nil client and fails on an
// unreachable server. (What a Notifier's Close does to its waiters is
// internal/contract's TestNotifierClose.)
func TestNotifierBadInput(t *testing.T) {
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
	lockTook := locktest.GiveUp(t, ctx, b, 10*time.Millisecond, correct.ErrNotObtained)
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	bStart := time.Now()
	if err := b.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	// B's hold counts from its Lock's return; its SET ran after bStart, so
	// the key outlives bStart by the lease: Held >= 20ms - (B's Lock call).
	atLeast := 20*time.Millisecond - time.Since(bStart)
	waitGone(t, c, key) // B's 20ms lease runs out
	if err := b.Unlock(ctx); !errors.Is(err, correct.ErrNotHeld) {
		t.Fatalf("B.Unlock after expiry = %v; want ErrNotHeld", err)
	}
	events := rec.Expect(t, "all", "correct", key, "acquired gave-up released acquired lost")
	observetest.CheckGaveUp(t, events[1], lockTook)
	if e := events[4]; e.Held < atLeast || !errors.Is(e.Err, correct.ErrNotHeld) {
		t.Errorf("lost event = %+v; want Held >= %v (the 20ms lease less B's Lock call) and ErrNotHeld", e, atLeast)
	}
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
	w, done := queueWaiter(t, ctx, c, key, correct.WithNotifier(n), correct.WithTTL(short))
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
