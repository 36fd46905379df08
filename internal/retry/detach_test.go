package retry

import (
	"context"
	"runtime"
	"testing"
	"time"
)

func TestDetachSharesABoundPerInterval(t *testing.T) {
	old := shared.Load()
	defer shared.Store(old)
	now := time.Now()
	ended := currentBound(now.Add(-ReleaseTimeout))
	b := currentBound(now)
	if b == ended || b.deadline.Sub(now) != ReleaseTimeout {
		t.Fatalf("at the end of a bound, got one ending %v later; want a new one, %v", b.deadline.Sub(now), ReleaseTimeout)
	}
	if currentBound(now.Add(detachSlack)) != b {
		t.Errorf("a bound with ReleaseTimeout-detachSlack left was replaced; want it shared")
	}
	later := now.Add(detachSlack + time.Millisecond)
	nb := currentBound(later)
	if nb == b || nb.deadline.Sub(later) != ReleaseTimeout {
		t.Errorf("a bound with less than ReleaseTimeout-detachSlack left was kept; want a new one")
	}
	if currentBound(now) == nb {
		t.Errorf("a bound with more than ReleaseTimeout left was kept; want a new one")
	}
}

func TestDetachedChildrenNeedNoGoroutine(t *testing.T) {
	ctx, stop := Detach(t.Context())
	defer stop()
	before := runtime.NumGoroutine()
	var cancels []context.CancelFunc
	for range 100 {
		c, cancel := context.WithTimeout(ctx, time.Hour)
		cancels = append(cancels, cancel)
		if d, _ := c.Deadline(); d.After(time.Now().Add(ReleaseTimeout)) {
			t.Fatalf("a child of a detached context ends at %v; want its parent's bound or sooner", d)
		}
	}
	if n := runtime.NumGoroutine() - before; n > 10 {
		t.Errorf("100 children of a detached context started %d goroutines; want none", n)
	}
	for _, cancel := range cancels {
		cancel()
	}
}
