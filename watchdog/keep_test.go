package watchdog_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locklab/locklab/correct"
	"github.com/locklab/locklab/internal/leakcheck"
	"github.com/locklab/locklab/internal/locktest"
	"github.com/locklab/locklab/reentrant"
	"github.com/locklab/locklab/watchdog"
)

// reentrantNotHeld tells Keep which reentrant errors mean loss.
var reentrantNotHeld = watchdog.WithNotHeld(func(err error) bool { return errors.Is(err, reentrant.ErrNotHeld) })

// TestKeepReentrant renews a reentrant lock held twice by one owner, then
// releases it. (TestKeepsLockFor10TTLs covers holding past the ttl.)
func TestKeepReentrant(t *testing.T) {
	verify := leakcheck.Since(t)
	const (
		ttl      = 2 * time.Second
		interval = 50 * time.Millisecond
	)
	key := newKey(t)
	ctx := reentrant.WithOwner(t.Context(), reentrant.NewOwner())
	rm := reentrant.New(rdb, key, reentrant.WithTTL(ttl))
	for range 2 {
		if err := rm.Lock(ctx); err != nil {
			t.Fatalf("reentrant Lock = %v", err)
		}
	}
	rec := newHookRecorder()
	lease, err := watchdog.Keep(ctx, rm, watchdog.WithTTL(ttl), watchdog.WithInterval(interval), reentrantNotHeld, watchdog.WithHook(rec.hook))
	if err != nil {
		t.Fatalf("Keep = %v", err)
	}
	for range 3 {
		rec.waitPoint(t, watchdog.HookRenewed, 10*ttl)
	}
	if err := lease.Context().Err(); err != nil {
		t.Fatalf("lease ended: %v", context.Cause(lease.Context()))
	}
	if pttl := rdb.PTTL(ctx, key).Val(); pttl <= ttl-time.Second {
		t.Errorf("PTTL after renewals = %v; want near %v", pttl, ttl)
	}
	if n, err := rm.Count(ctx); n != 2 || err != nil {
		t.Errorf("Count after renewals = %d, %v; want 2, nil", n, err)
	}
	if err := lease.Stop(); err != nil {
		t.Errorf("Stop = %v; want nil", err)
	}
	if cause := context.Cause(lease.Context()); !errors.Is(cause, watchdog.ErrReleased) {
		t.Errorf("cause after Stop = %v; want ErrReleased", cause)
	}
	if err := lease.Stop(); !errors.Is(err, watchdog.ErrReleased) {
		t.Errorf("second Stop = %v; want ErrReleased", err)
	}
	for range 2 {
		if err := rm.Unlock(ctx); err != nil {
			t.Fatalf("reentrant Unlock = %v", err)
		}
	}
	locktest.CheckGone(t, rdb, key, "after the last Unlock")
	verify()
}

// TestKeepReentrantLost takes the key away from a kept reentrant lock:
// with WithNotHeld the refusal is loss at once; without it the error is
// retried as transient and the lease still runs out within a ttl.
func TestKeepReentrantLost(t *testing.T) {
	const interval = 50 * time.Millisecond
	tests := []struct {
		name     string
		ttl      time.Duration
		opts     []watchdog.Option
		wantText string // in the cause
	}{
		// The refused renewal has 1.9s to land, before the lease runs out.
		{"WithNotHeld", 2 * time.Second, []watchdog.Option{reentrantNotHeld}, "refused"},
		// Refusals are retried as transient errors for 950ms.
		{"default", time.Second, nil, "ran out"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			verify := leakcheck.Since(t)
			key := newKey(t)
			ctx := reentrant.WithOwner(t.Context(), reentrant.NewOwner())
			rm := reentrant.New(rdb, key, reentrant.WithTTL(tt.ttl))
			if err := rm.Lock(ctx); err != nil {
				t.Fatalf("reentrant Lock = %v", err)
			}
			lease, err := watchdog.Keep(ctx, rm, append(tt.opts, watchdog.WithTTL(tt.ttl), watchdog.WithInterval(interval))...)
			if err != nil {
				t.Fatalf("Keep = %v", err)
			}
			rdb.Del(ctx, key)
			waitClosed(t, lease.Done(), 10*tt.ttl, "Done after the key was deleted")
			cause := context.Cause(lease.Context())
			if !errors.Is(cause, watchdog.ErrNotHeld) || !errors.Is(cause, reentrant.ErrNotHeld) || !contains(cause, tt.wantText) {
				t.Errorf("cause = %v; want %q wrapping both ErrNotHeld", cause, tt.wantText)
			}
			if err := lease.Stop(); !errors.Is(err, watchdog.ErrNotHeld) {
				t.Errorf("Stop after loss = %v; want ErrNotHeld", err)
			}
			if err := rm.Unlock(ctx); !errors.Is(err, reentrant.ErrNotHeld) {
				t.Errorf("reentrant Unlock after loss = %v; want ErrNotHeld", err)
			}
			verify()
		})
	}
}

func TestKeepNotHeld(t *testing.T) {
	ctx := reentrant.WithOwner(t.Context(), reentrant.NewOwner())
	rm := reentrant.New(rdb, newKey(t))
	lease, err := watchdog.Keep(ctx, rm, reentrantNotHeld)
	if lease != nil || !errors.Is(err, watchdog.ErrNotHeld) || !errors.Is(err, reentrant.ErrNotHeld) {
		t.Errorf("Keep of a lock not held = %v, %v; want nil and both ErrNotHeld", lease, err)
	}
}

func TestKeepContextEnds(t *testing.T) {
	verify := leakcheck.Since(t)
	const ttl = 5 * time.Second
	key := newKey(t)
	ctx, cancel := context.WithCancel(reentrant.WithOwner(t.Context(), reentrant.NewOwner()))
	rm := reentrant.New(rdb, key, reentrant.WithTTL(ttl))
	if err := rm.Lock(ctx); err != nil {
		t.Fatalf("reentrant Lock = %v", err)
	}
	lease, err := watchdog.Keep(ctx, rm, watchdog.WithTTL(ttl), reentrantNotHeld)
	if err != nil {
		t.Fatalf("Keep = %v", err)
	}
	cancel()
	waitClosed(t, lease.Done(), 10*ttl, "Done after ctx ended")
	if err := lease.Stop(); !errors.Is(err, context.Canceled) {
		t.Errorf("Stop after ctx ended = %v; want Canceled", err)
	}
	// Keep does not release: the owner does, with a context that still
	// carries the owner.
	if err := rm.Unlock(ctx); err != nil {
		t.Errorf("reentrant Unlock = %v", err)
	}
	verify()
}

func contains(err error, s string) bool { return err != nil && strings.Contains(err.Error(), s) }

// countingExtender is correct's Mutex with its Extend calls counted and
// its Until hidden, as for a lock that reports none; withUntil shows it.
type countingExtender struct {
	m       *correct.Mutex
	extends atomic.Int32
}

func (c *countingExtender) Extend(ctx context.Context, ttl time.Duration) error {
	c.extends.Add(1)
	return c.m.Extend(ctx, ttl)
}

type withUntil struct{ *countingExtender }

func (w withUntil) Until() time.Time { return w.m.Until() }

// TestKeepStartsFromUntil: a lock that reports its validity (correct's
// Until) is kept without a first Extend, and is then renewed as usual; one
// that does not is extended first, as before.
func TestKeepStartsFromUntil(t *testing.T) {
	verify := leakcheck.Since(t)
	const (
		ttl      = 2 * time.Second
		interval = 50 * time.Millisecond
	)
	correctNotHeld := watchdog.WithNotHeld(func(err error) bool { return errors.Is(err, correct.ErrNotHeld) })
	for _, tt := range []struct {
		name       string
		until      bool
		wantFirsts int32 // Extend calls made by Keep itself
	}{
		{"with Until", true, 0},
		{"without Until", false, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			key := newKey(t)
			c := &countingExtender{m: correct.New(rdb, key, correct.WithTTL(ttl))}
			if err := c.m.Lock(t.Context()); err != nil {
				t.Fatalf("Lock = %v", err)
			}
			var e watchdog.Extender = c
			if tt.until {
				e = withUntil{c}
			}
			rec := newHookRecorder()
			lease, err := watchdog.Keep(t.Context(), e, watchdog.WithTTL(ttl), watchdog.WithInterval(interval), correctNotHeld, watchdog.WithHook(rec.hook))
			if err != nil {
				t.Fatalf("Keep = %v", err)
			}
			if n := c.extends.Load(); n != tt.wantFirsts {
				t.Errorf("Extend calls when Keep returned = %d; want %d", n, tt.wantFirsts)
			}
			for range 3 {
				rec.waitPoint(t, watchdog.HookRenewed, 10*ttl)
			}
			if err := lease.Context().Err(); err != nil {
				t.Fatalf("lease ended: %v", context.Cause(lease.Context()))
			}
			if err := lease.Stop(); err != nil {
				t.Errorf("Stop = %v; want nil", err)
			}
			if err := c.m.Unlock(t.Context()); err != nil {
				t.Errorf("Unlock = %v", err)
			}
		})
	}
	verify()
}

// failingUntil is an Extender whose every renewal fails with a transport
// error, and which reports its lock valid until until.
type failingUntil struct{ until time.Time }

func (f failingUntil) Extend(context.Context, time.Duration) error {
	return errors.New("connection reset by peer")
}
func (f failingUntil) Until() time.Time { return f.until }

// TestKeepFromUntilKeepsTheMargin: a lease started from the lock's own
// Until must end, when no renewal succeeds, a drift margin before that
// Until, as every later deadline does. (Its first deadline was Until
// itself: no margin for a server clock that runs fast.)
func TestKeepFromUntilKeepsTheMargin(t *testing.T) {
	const ttl = time.Minute // margin: 1% + 2ms = 602ms
	until := time.Now().Add(2 * time.Second)
	lease, err := watchdog.Keep(t.Context(), failingUntil{until}, watchdog.WithTTL(ttl), watchdog.WithInterval(100*time.Millisecond))
	if err != nil {
		t.Fatalf("Keep = %v", err)
	}
	defer lease.Stop()
	select {
	case <-lease.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the lease did not run out")
	}
	// Due at until − 602ms; 300ms of slack for a late timer.
	if early := time.Until(until); early < 300*time.Millisecond {
		t.Errorf("the lease ended %v before the lock's Until; want about 602ms (the drift margin)", early)
	}
	if !errors.Is(context.Cause(lease.Context()), watchdog.ErrNotHeld) {
		t.Errorf("cause = %v; want ErrNotHeld", context.Cause(lease.Context()))
	}
}
