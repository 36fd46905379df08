package registry

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestHoldPastSaysWhyTheWaitEnded: a Lock (rueidislock, watchdog) that
// waits in holdPast past its caller's deadline returns the caller's
// reason, context.DeadlineExceeded, not the cancellation of the hold
// context it saw; a lock that fails on its own keeps its error.
func TestHoldPastSaysWhyTheWaitEnded(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	waitHold := func(hold context.Context) error { <-hold.Done(); return hold.Err() }
	if _, err := holdPast(ctx, waitHold, func() {}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("wait past the deadline: %v; want %v", err, context.DeadlineExceeded)
	}
	own := errors.New("server said no")
	if _, err := holdPast(t.Context(), func(context.Context) error { return own }, func() {}); !errors.Is(err, own) {
		t.Errorf("lock failing on its own: %v; want %v", err, own)
	}
}
