package held_test

import (
	"context"
	"errors"
	"testing"

	"github.com/locklab/locklab/internal/held"
	"github.com/locklab/locklab/observe"
)

func TestSlot(t *testing.T) {
	var s held.Slot[int]
	if h := s.Get(); h != nil {
		t.Fatalf("zero Slot: Get() = %v; want nil", h)
	}
	a, b := new(int), new(int)
	s.Set(a)
	if h := s.Get(); h != a {
		t.Fatalf("Get() after Set(a) = %p; want a, %p", h, a)
	}
	s.Set(b) // a concurrent Lock replaced a
	if d := s.Forget(a); d != 0 {
		t.Errorf("Forget(a) after Set(b) = %v; want 0", d)
	}
	if h := s.Get(); h != b {
		t.Fatalf("Get() after Forget(a) = %p; want b, %p (still held)", h, b)
	}
	if d := s.Forget(b); d < 0 {
		t.Errorf("Forget(b) = %v; want how long b was held", d)
	}
	if h := s.Get(); h != nil {
		t.Errorf("Get() after Forget(b) = %p; want nil", h)
	}
}

func TestFrame(t *testing.T) {
	var events []observe.Event
	var points []string
	f := held.Frame[int]{
		Kind: "kind",
		Key:  "key",
		Hook: func(_ context.Context, point string) { points = append(points, point) },
		Obs:  func(e observe.Event) { events = append(events, e) },
	}
	invalid := errors.New("invalid")
	ok, err := f.Attempt(t.Context(), true, func() error { return invalid }, func(context.Context, bool) (bool, error) {
		t.Error("Attempt called acquire after check failed")
		return true, nil
	})
	if ok || err != invalid {
		t.Fatalf("Attempt with a failing check = %v, %v; want false, its error", ok, err)
	}
	ok, err = f.Attempt(t.Context(), true, func() error { return nil }, func(_ context.Context, wait bool) (bool, error) {
		if !wait {
			t.Errorf("acquire(wait=false); want wait=true, as passed to Attempt")
		}
		return true, nil
	})
	if !ok || err != nil {
		t.Fatalf("Attempt = %v, %v; want true, nil (what acquire returned)", ok, err)
	}
	f.At(t.Context(), "p")
	if len(points) != 1 || points[0] != "p" {
		t.Errorf("hook points = %q; want [p]", points)
	}
	notHeld := errors.New("not held")
	h := new(int)
	f.Cur.Set(h)
	if err := f.Ended(h, true, notHeld); err != notHeld {
		t.Errorf("Ended(h, lost) = %v; want notHeld", err)
	}
	if got := f.Cur.Get(); got != nil {
		t.Errorf("Cur.Get() after Ended = %p; want nil", got)
	}
	f.Cur.Set(h)
	if err := f.Ended(h, false, notHeld); err != nil {
		t.Errorf("Ended(h, released) = %v; want nil", err)
	}
	want := []observe.Kind{observe.Acquired, observe.Lost, observe.Released}
	if len(events) != len(want) {
		t.Fatalf("observer got %d events (%v); want %d", len(events), events, len(want))
	}
	for i, e := range events {
		if e.Kind != want[i] || e.Lock != "kind" || e.Key != "key" {
			t.Errorf("event %d = %+v; want kind %v, lock \"kind\", key \"key\"", i, e, want[i])
		}
	}
	if events[1].Err != notHeld {
		t.Errorf("Lost event's Err = %v; want notHeld", events[1].Err)
	}

	var zero held.Frame[int] // no hook, no observer: nothing to call
	zero.At(t.Context(), "p")
	zero.Report(observe.Released, 0, nil)
	select {
	case <-held.Closed():
	default:
		t.Error("Closed() is not closed")
	}
}

func TestFrameReleasing(t *testing.T) {
	var points []string
	f := held.Frame[int]{Hook: func(_ context.Context, point string) { points = append(points, point) }}
	invalid, notHeld := errors.New("invalid"), errors.New("not held")
	ok := func() error { return nil }
	if h, err := f.Releasing(t.Context(), func() error { return invalid }, notHeld, "p"); h != nil || err != invalid {
		t.Errorf("Releasing with a failing check = %v, %v; want nil, its error", h, err)
	}
	if h, err := f.Releasing(t.Context(), ok, notHeld, "p"); h != nil || err != notHeld {
		t.Errorf("Releasing with no hold = %v, %v; want nil, notHeld", h, err)
	}
	if len(points) != 0 {
		t.Errorf("hook points = %q before any hold; want none", points)
	}
	want := new(int)
	f.Cur.Set(want)
	if h, err := f.Releasing(t.Context(), ok, notHeld, "p"); h != want || err != nil {
		t.Errorf("Releasing = %p, %v; want the hold %p, nil", h, err, want)
	}
	if len(points) != 1 || points[0] != "p" {
		t.Errorf("hook points = %q; want [p]", points)
	}
	if f.Cur.Get() != want {
		t.Error("Releasing forgot the hold; want it kept until Ended")
	}
}
