package fencing_test

import (
	"errors"
	"testing"
	"time"

	"github.com/locklab/locklab/fencing"
	"github.com/locklab/locklab/internal/leakcheck"
	"github.com/locklab/locklab/internal/locktest"
	"github.com/locklab/locklab/internal/observetest"
)

// TestObserver sees what a Mutex reports: the wait of an acquisition (one
// event for a Lock however many attempts it made), a give-up with its
// cause, the hold time of a release, and losses found by Unlock and Extend.
func TestObserver(t *testing.T) {
	defer leakcheck.Since(t)()
	ctx := t.Context()
	key := newKey(t)
	rec := observetest.New()
	obs := fencing.WithObserver(rec.Observe)
	const ttl = 20 * time.Millisecond
	a := fencing.New(rdb, key, obs)
	b := fencing.New(rdb, key, obs, fencing.WithTTL(ttl))
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	took := locktest.GiveUp(t, ctx, b, 10*time.Millisecond, fencing.ErrNotObtained)
	if ok, err := b.TryLock(ctx); ok || err != nil { // no give-up: no event
		t.Fatalf("B.TryLock = %v, %v; want false, nil", ok, err)
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	waitGone(t, key) // B's 20ms lease runs out
	if err := b.Unlock(ctx); !errors.Is(err, fencing.ErrNotHeld) {
		t.Fatalf("B.Unlock after expiry = %v; want ErrNotHeld", err)
	}
	if err := b.Unlock(ctx); !errors.Is(err, fencing.ErrNotHeld) { // never held: no event
		t.Fatalf("second B.Unlock = %v; want ErrNotHeld", err)
	}
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	rdb.Del(ctx, key) // an operator deletes A's lock
	if err := a.Extend(ctx, time.Second); !errors.Is(err, fencing.ErrNotHeld) {
		t.Fatalf("A.Extend after DEL = %v; want ErrNotHeld", err)
	}

	events := rec.Expect(t, "all", "fencing", key, "acquired gave-up released acquired lost acquired lost")
	observetest.CheckGaveUp(t, events[1], took)
	if e := events[2]; e.Held <= 0 {
		t.Errorf("released event = %+v; want Held > 0", e)
	}
	if e := events[4]; e.Held < ttl || !errors.Is(e.Err, fencing.ErrNotHeld) {
		t.Errorf("lost event = %+v; want Held >= the %v lease and ErrNotHeld", e, ttl)
	}
	if e := events[6]; !errors.Is(e.Err, fencing.ErrNotHeld) {
		t.Errorf("lost event from Extend = %+v; want ErrNotHeld", e)
	}
}
