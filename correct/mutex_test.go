package correct_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/locklab/locklab/correct"
	"github.com/locklab/locklab/internal/leakcheck"
	"github.com/locklab/locklab/internal/locktest"
)

// TestMutualExclusion runs 16 clients, each with its own Mutex on one key,
// through a critical section that fails loudly if two are in it at once:
// an in-memory count of holders, and a read-modify-write of a counter in
// Redis that loses updates when the lock lets two clients interleave.
func TestMutualExclusion(t *testing.T) {
	leakcheck.Guard(t)
	const clients, rounds = 16, 4
	c := newClient(t)
	ctx := testContext(t)
	key := newKey(t)
	counter := key + ":counter"
	t.Cleanup(func() { c.Del(context.Background(), counter) })

	var inside atomic.Int32
	g, gctx := errgroup.WithContext(ctx)
	for i := range clients {
		g.Go(func() error {
			m := correct.New(c, key)
			for range rounds {
				if err := m.Lock(gctx); err != nil {
					return fmt.Errorf("client %d: Lock: %w", i, err)
				}
				if n := inside.Add(1); n != 1 {
					return fmt.Errorf("client %d: %d holders at once", i, n)
				}
				n, err := c.Get(gctx, counter).Int()
				if err != nil && !errors.Is(err, redis.Nil) {
					return err
				}
				if err := c.Set(gctx, counter, n+1, 0).Err(); err != nil {
					return err
				}
				inside.Add(-1)
				if err := m.Unlock(gctx); err != nil {
					return fmt.Errorf("client %d: Unlock: %w", i, err)
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	if got, want := c.Get(ctx, counter).Val(), fmt.Sprint(clients*rounds); got != want {
		t.Errorf("counter = %s; want %s (updates were lost: two holders overlapped)", got, want)
	}
}

func TestTryLock(t *testing.T) {
	c := newClient(t)
	ctx := testContext(t)
	key := newKey(t)
	m1, m2 := correct.New(c, key), correct.New(c, key)

	if ok, err := m1.TryLock(ctx); !ok || err != nil {
		t.Fatalf("m1.TryLock = %v, %v; want true, nil", ok, err)
	}
	if ok, err := m2.TryLock(ctx); ok || err != nil {
		t.Fatalf("m2.TryLock while m1 holds = %v, %v; want false, nil", ok, err)
	}
	if got := m2.Token(); got != "" {
		t.Errorf("m2.Token() after a refused TryLock = %q; want \"\"", got)
	}
	checkHolds(t, ctx, c, key, m1, "m1's")
	if err := m1.Unlock(ctx); err != nil {
		t.Fatalf("m1.Unlock = %v; want nil", err)
	}
	if ok, err := m2.TryLock(ctx); !ok || err != nil {
		t.Fatalf("m2.TryLock after m1 unlocked = %v, %v; want true, nil", ok, err)
	}
	if err := m2.Unlock(ctx); err != nil {
		t.Fatalf("m2.Unlock = %v; want nil", err)
	}
}

func TestTokenIsFreshPerAcquisition(t *testing.T) {
	c := newClient(t)
	ctx := testContext(t)
	key := newKey(t)
	m := correct.New(c, key)
	seen := map[string]bool{}
	for range 3 {
		if err := m.Lock(ctx); err != nil {
			t.Fatalf("Lock = %v; want nil", err)
		}
		tok := m.Token()
		if len(tok) != 22 || seen[tok] {
			t.Errorf("Token() = %q; want a new 22-character token (seen: %v)", tok, seen)
		}
		seen[tok] = true
		if got := c.Get(ctx, key).Val(); got != tok {
			t.Errorf("GET %s = %q; want Token() %q", key, got, tok)
		}
		if err := m.Unlock(ctx); err != nil {
			t.Fatalf("Unlock = %v; want nil", err)
		}
		if got := m.Token(); got != "" {
			t.Errorf("Token() after Unlock = %q; want \"\"", got)
		}
	}
}

// TestUntilIsMeasuredBeforeTheSet checks Until and Extend against the
// local clock read around the calls: Until must lie in
// [before+ttl, after+ttl], never later.
func TestUntilIsMeasuredBeforeTheSet(t *testing.T) {
	c := newClient(t)
	ctx := testContext(t)
	const ttl, longer = 8 * time.Second, 30 * time.Second
	m := correct.New(c, newKey(t), correct.WithTTL(ttl))
	if !m.Until().IsZero() {
		t.Errorf("Until() before Lock = %v; want zero", m.Until())
	}

	before := time.Now()
	if err := m.Lock(ctx); err != nil {
		t.Fatalf("Lock = %v; want nil", err)
	}
	after := time.Now()
	if u := m.Until(); u.Before(before.Add(ttl)) || u.After(after.Add(ttl)) {
		t.Errorf("Until() = Lock's start + %v; want between %v and %v", u.Sub(before), ttl, after.Sub(before)+ttl)
	}
	if got, err := m.TTL(ctx); err != nil || got <= 0 || got > ttl {
		t.Errorf("TTL = %v, %v; want in (0, %v]", got, err, ttl)
	}

	before = time.Now()
	if err := m.Extend(ctx, longer); err != nil {
		t.Fatalf("Extend(%v) = %v; want nil", longer, err)
	}
	after = time.Now()
	if u := m.Until(); u.Before(before.Add(longer)) || u.After(after.Add(longer)) {
		t.Errorf("Until() = Extend's start + %v; want between %v and %v", u.Sub(before), longer, after.Sub(before)+longer)
	}
	if got, err := m.TTL(ctx); err != nil || got <= ttl || got > longer {
		t.Errorf("TTL after Extend(%v) = %v, %v; want in (%v, %v]", longer, got, err, ttl, longer)
	}

	if err := m.Unlock(ctx); err != nil {
		t.Fatalf("Unlock = %v; want nil", err)
	}
	if !m.Until().IsZero() {
		t.Errorf("Until() after Unlock = %v; want zero", m.Until())
	}
}

func TestHooks(t *testing.T) {
	c := newClient(t)
	ctx := testContext(t)
	key := newKey(t)
	var (
		mu     sync.Mutex
		points []string
		m      *correct.Mutex
	)
	m = correct.New(c, key, correct.WithHook(func(ctx context.Context, point string) {
		mu.Lock()
		points = append(points, point)
		mu.Unlock()
		// Both hooks fire while the key holds our token.
		if got, want := c.Get(ctx, key).Val(), m.Token(); got != want || want == "" {
			t.Errorf("at %s: GET %s = %q; want Token() %q", point, key, got, want)
		}
	}))
	other := correct.New(c, key)

	mustLock(t, ctx, m)
	if ok, err := other.TryLock(ctx); ok || err != nil {
		t.Fatalf("other.TryLock = %v, %v; want false, nil", ok, err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatalf("Unlock = %v; want nil", err)
	}
	if err := m.Unlock(ctx); !errors.Is(err, correct.ErrNotHeld) {
		t.Fatalf("second Unlock = %v; want ErrNotHeld", err)
	}
	want := []string{correct.HookAcquired, correct.HookBeforeRelease}
	if !slices.Equal(points, want) {
		t.Errorf("hook points = %q; want %q", points, want)
	}
}

// TestUnlockIgnoresCancellation is the deferred-Unlock bug: by the time
// Unlock runs, the request's context has ended. The lock must still be
// released, not left to block everyone for a TTL.
func TestUnlockIgnoresCancellation(t *testing.T) {
	for _, end := range []struct {
		name string
		ctx  func(context.Context) (context.Context, context.CancelFunc)
	}{
		{"cancelled", context.WithCancel},
		{"deadline exceeded", func(ctx context.Context) (context.Context, context.CancelFunc) {
			return context.WithDeadline(ctx, time.Now().Add(time.Hour))
		}},
	} {
		t.Run(end.name, func(t *testing.T) {
			c := newClient(t)
			key := newKey(t)
			m := correct.New(c, key)
			reqCtx, cancel := end.ctx(testContext(t))
			mustLock(t, reqCtx, m)
			cancel() // the request ends before its deferred Unlock runs

			if err := m.Unlock(reqCtx); err != nil {
				t.Fatalf("Unlock(cancelled ctx) = %v; want nil", err)
			}
			locktest.CheckGone(t, c, key, "after Unlock")
		})
	}
}

func TestExtendInvalidTTL(t *testing.T) {
	c := newClient(t)
	ctx := testContext(t)
	key := newKey(t)
	m := correct.New(c, key)
	mustLock(t, ctx, m)
	for _, ttl := range []time.Duration{0, -time.Second, 999 * time.Microsecond} {
		if err := m.Extend(ctx, ttl); !errors.Is(err, correct.ErrInvalid) {
			t.Errorf("Extend(%v) = %v; want ErrInvalid", ttl, err)
		}
	}
	if got := c.PTTL(ctx, key).Val(); got <= 0 {
		t.Errorf("PTTL %s after invalid Extends = %v; want the lock's TTL unchanged", key, got)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Errorf("Unlock = %v; want nil", err)
	}
}

// mustLock locks m or fails the test. It must run in the test's goroutine.
func mustLock(t *testing.T, ctx context.Context, m *correct.Mutex) {
	t.Helper()
	if err := m.Lock(ctx); err != nil {
		t.Fatalf("Lock(%q) = %v; want nil", m.Key(), err)
	}
}
