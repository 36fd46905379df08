package held_test

import (
	"testing"

	"github.com/locklab/locklab/internal/held"
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

func TestClosed(t *testing.T) {
	select {
	case <-held.Closed():
	default:
		t.Error("Closed() is not closed")
	}
}
