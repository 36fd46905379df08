package watchdog_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/internal/leakcheck"
	"github.com/locklab/locklab/internal/locktest"
	"github.com/locklab/locklab/internal/observetest"
	"github.com/locklab/locklab/observe"
	"github.com/locklab/locklab/watchdog"
)

// TestObserver sees what a Mutex reports: the wait of an acquisition, a
// give-up with its cause, the hold time of a release, a loss declared by
// the renewal engine (renewal refused, lease ran out) with the cause that
// the holder's context is cancelled with, and the release the refresher
// makes when the holder's context ends.
func TestObserver(t *testing.T) {
	verify := leakcheck.Since(t)
	ctx := t.Context()
	key := newKey(t)
	rec := observetest.New()
	obs := watchdog.WithObserver(rec.Observe)
	const wait = 10 * time.Second // for events that need no timing, only a bound

	expect := func(kind observe.Kind) observe.Event {
		t.Helper()
		e := rec.Next(t, wait)
		if e.Kind != kind || e.Lock != "watchdog" || e.Key != key {
			t.Fatalf("event = %+v; want Kind %v, Lock watchdog, Key %q (events: %s)", e, kind, key, rec.Kinds())
		}
		return e
	}

	a := watchdog.New(rdb, key, obs, watchdog.WithTTL(5*time.Second))
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	expect(observe.Acquired)

	b := watchdog.New(rdb, key, obs, watchdog.WithTTL(2*time.Second), watchdog.WithInterval(50*time.Millisecond))
	took := locktest.GiveUp(t, ctx, b, 10*time.Millisecond, watchdog.ErrNotObtained)
	observetest.CheckGaveUp(t, expect(observe.GaveUp), took)
	if ok, err := b.TryLock(ctx); ok || err != nil {
		t.Fatalf("B.TryLock = %v, %v; want false, nil", ok, err)
	}
	// A TryLock that finds the lock taken is no give-up: no event.

	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if e := expect(observe.Released); e.Held <= 0 {
		t.Errorf("released event = %+v; want Held > 0", e)
	}

	// Renewal refused: an operator deletes B's key; B's next renewal (every
	// 50ms) finds it gone, and the engine reports the loss at once.
	if ok, err := b.TryLock(ctx); !ok || err != nil {
		t.Fatalf("B.TryLock = %v, %v; want true, nil", ok, err)
	}
	expect(observe.Acquired)
	rdb.Del(ctx, key)
	e := expect(observe.Lost)
	waitClosed(t, b.Done(), wait, "B's Done after the loss")
	if cause := context.Cause(b.Context()); e.Err != cause || !errors.Is(e.Err, watchdog.ErrNotHeld) {
		t.Errorf("lost event Err = %v; want the Context's cause %v, wrapping ErrNotHeld", e.Err, cause)
	}
	if e.Held <= 0 {
		t.Errorf("lost event Held = %v; want > 0", e.Held)
	}
	if err := b.Unlock(ctx); !errors.Is(err, watchdog.ErrNotHeld) {
		t.Fatalf("B.Unlock after loss = %v; want ErrNotHeld", err)
	}
	// That Unlock reports nothing: the loss was reported once, above.

	// Lease ran out: the refresher is parked until the expiry timer ends
	// the lease.
	park := func(ctx context.Context, point string) {
		if point == watchdog.HookBeforeRenew {
			<-ctx.Done() // the lease's context, cancelled when it ends
		}
	}
	const ttl = 60 * time.Millisecond
	c := watchdog.New(rdb, key, obs, watchdog.WithTTL(ttl), watchdog.WithHook(park))
	if err := c.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	expect(observe.Acquired)
	e = expect(observe.Lost)
	if cause := context.Cause(c.Context()); e.Err != cause || !strings.Contains(e.Err.Error(), "no renewal succeeded") {
		t.Errorf("lost event Err = %v; want the Context's cause %v (no renewal)", e.Err, cause)
	}
	if e.Held < ttl-ttl/100-2*time.Millisecond {
		t.Errorf("lost event Held = %v; want at least the lease of %v less its margin", e.Held, ttl)
	}
	if err := c.Unlock(ctx); !errors.Is(err, watchdog.ErrNotHeld) {
		t.Fatalf("C.Unlock after loss = %v; want ErrNotHeld", err)
	}
	waitKeyGone(t, rdb, key, wait)

	// The holder's context ends: the refresher releases the lock and
	// reports it.
	hctx, hcancel := context.WithCancel(ctx)
	d := watchdog.New(rdb, key, obs, watchdog.WithTTL(5*time.Second))
	if err := d.Lock(hctx); err != nil {
		t.Fatal(err)
	}
	expect(observe.Acquired)
	hcancel()
	expect(observe.Released)
	waitKeyGone(t, rdb, key, wait)
	if err := d.Unlock(ctx); !errors.Is(err, watchdog.ErrNotHeld) {
		t.Fatalf("D.Unlock after its context ended = %v; want ErrNotHeld", err)
	}

	want := "acquired gave-up released acquired lost acquired lost acquired released"
	if got := rec.Kinds(); got != want {
		t.Errorf("events = %s; want %s", got, want)
	}
	verify()
}

// TestObserverNil: a nil observer is the default, and reports nothing.
func TestObserverNil(t *testing.T) {
	ctx := t.Context()
	m := watchdog.New(rdb, newKey(t), watchdog.WithObserver(nil))
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
