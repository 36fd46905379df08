package reentrant_test

import (
	"errors"
	"testing"
	"time"

	"github.com/locklab/locklab/internal/leakcheck"
	"github.com/locklab/locklab/internal/locktest"
	"github.com/locklab/locklab/internal/observetest"
	"github.com/locklab/locklab/observe"
	"github.com/locklab/locklab/reentrant"
)

// TestObserver sees only outermost holds: re-entries and partial Unlocks
// report nothing, the outermost Lock and Unlock report Acquired and
// Released; a give-up has its cause, and a loss found by Unlock or Extend
// its hold time. An Unlock without a Lock is no loss.
func TestObserver(t *testing.T) {
	verify := leakcheck.Since(t)
	key := newKey(t)
	rec := observetest.New()
	obs := reentrant.WithObserver(rec.Observe)
	check := func(step, want string) []observe.Event {
		t.Helper()
		return rec.Expect(t, step, "reentrant", key, want)
	}

	m := reentrant.New(rdb, key, obs)
	a := ownerCtx(t)
	if err := m.Lock(a); err != nil {
		t.Fatal(err)
	}
	check("outermost Lock", "acquired")
	if ok, err := m.TryLock(a); !ok || err != nil {
		t.Fatalf("re-entering TryLock = %v, %v; want true, nil", ok, err)
	}
	if err := m.Lock(a); err != nil {
		t.Fatal(err)
	}
	check("re-entries", "")

	b := ownerCtx(t)
	took := locktest.GiveUp(t, b, m, 10*time.Millisecond, reentrant.ErrNotObtained)
	observetest.CheckGaveUp(t, check("B gives up", "gave-up")[0], took)
	if ok, err := m.TryLock(b); ok || err != nil {
		t.Fatalf("B.TryLock = %v, %v; want false, nil", ok, err)
	}
	check("B's TryLock refused", "")

	for range 2 {
		if err := m.Unlock(a); err != nil {
			t.Fatal(err)
		}
	}
	check("partial Unlocks", "")
	if err := m.Unlock(a); err != nil {
		t.Fatal(err)
	}
	if e := check("outermost Unlock", "released")[0]; e.Held <= 0 {
		t.Errorf("released event = %+v; want Held > 0", e)
	}
	if err := m.Unlock(a); !errors.Is(err, reentrant.ErrNotHeld) {
		t.Fatalf("extra Unlock = %v; want ErrNotHeld", err)
	}
	check("Unlock without a hold", "")

	// The lease runs out under a re-entered hold: Unlock finds it gone.
	const ttl = 20 * time.Millisecond
	short20 := reentrant.New(rdb, key, obs, reentrant.WithTTL(ttl))
	c := ownerCtx(t)
	for range 2 {
		if err := short20.Lock(c); err != nil {
			t.Fatal(err)
		}
	}
	waitKeyGone(t, key, 5*time.Second)
	if err := short20.Unlock(c); !errors.Is(err, reentrant.ErrNotHeld) {
		t.Fatalf("Unlock after expiry = %v; want ErrNotHeld", err)
	}
	if e := check("expired", "acquired lost")[1]; e.Held < ttl || !errors.Is(e.Err, reentrant.ErrNotHeld) {
		t.Errorf("lost event = %+v; want Held >= the %v lease and ErrNotHeld", e, ttl)
	}
	if err := short20.Unlock(c); !errors.Is(err, reentrant.ErrNotHeld) {
		t.Fatalf("second Unlock after expiry = %v; want ErrNotHeld", err)
	}
	check("loss reported once", "")

	// Extend finds the lock deleted under its owner.
	d := ownerCtx(t)
	if err := m.Lock(d); err != nil {
		t.Fatal(err)
	}
	rdb.Del(d, key)
	if err := m.Extend(d, time.Second); !errors.Is(err, reentrant.ErrNotHeld) {
		t.Fatalf("Extend after DEL = %v; want ErrNotHeld", err)
	}
	check("Extend after DEL", "acquired lost")

	// The outermost Lock through another Mutex value: its Unlock here is
	// reported with an unknown hold time.
	e := ownerCtx(t)
	if err := reentrant.New(rdb, key).Lock(e); err != nil {
		t.Fatal(err)
	}
	if err := m.Unlock(e); err != nil {
		t.Fatal(err)
	}
	if ev := check("Lock elsewhere", "released")[0]; ev.Held != 0 {
		t.Errorf("released event = %+v; want Held 0 (the hold began elsewhere)", ev)
	}
	verify()
}
