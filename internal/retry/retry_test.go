package retry_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/internal/retry"
)

var errNotObtained = errors.New("test: lock not obtained")

func TestDoStopsOnSuccessAndNumbersAttempts(t *testing.T) {
	var seen []int
	err := retry.Do(t.Context(), retry.Policy{Delay: func(int) time.Duration { return 0 }}, errNotObtained,
		func(_ context.Context, n int) (bool, error) {
			seen = append(seen, n)
			return n == 3, nil
		})
	if err != nil || len(seen) != 3 || seen[0] != 1 || seen[2] != 3 {
		t.Errorf("Do = %v after attempts %v; want nil after 1, 2, 3", err, seen)
	}
}

func TestDoReturnsTheAttemptsError(t *testing.T) {
	boom := errors.New("boom")
	err := retry.Do(t.Context(), retry.Policy{}, errNotObtained, func(context.Context, int) (bool, error) { return false, boom })
	if err != boom {
		t.Errorf("Do = %v; want the attempt's error unchanged", err)
	}
}

func TestDoRunsOutOfTries(t *testing.T) {
	calls := 0
	err := retry.Do(t.Context(), retry.Policy{Tries: 2, Delay: func(int) time.Duration { return 0 }}, errNotObtained,
		func(context.Context, int) (bool, error) { calls++; return false, nil })
	if !errors.Is(err, errNotObtained) || calls != 2 || !strings.Contains(err.Error(), "2 tries") {
		t.Errorf("Do = %v after %d calls; want ErrNotObtained naming 2 tries", err, calls)
	}
}

func TestDoZeroTriesIsNoLimit(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	calls := 0
	err := retry.Do(ctx, retry.Policy{Delay: func(int) time.Duration { return 0 }}, errNotObtained,
		func(context.Context, int) (bool, error) {
			if calls++; calls == 100 {
				cancel()
			}
			return false, nil
		})
	if !errors.Is(err, errNotObtained) || !errors.Is(err, context.Canceled) || calls != 100 {
		t.Errorf("Do = %v after %d calls; want ErrNotObtained joined with Canceled after 100", err, calls)
	}
}

func TestDoEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	err := retry.Do(ctx, retry.Policy{Delay: func(int) time.Duration { return time.Hour }}, errNotObtained,
		func(context.Context, int) (bool, error) { return false, nil })
	if !errors.Is(err, errNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Do = %v; want ErrNotObtained joined with DeadlineExceeded", err)
	}
	// A context that already ended: no attempt at all.
	calls := 0
	err = retry.Do(ctx, retry.Policy{}, errNotObtained, func(context.Context, int) (bool, error) { calls++; return true, nil })
	if calls != 0 || !errors.Is(err, errNotObtained) {
		t.Errorf("Do on an ended context = %v after %d attempts; want ErrNotObtained and none", err, calls)
	}
}

func TestFailedSaysWhenTheContextEndedIt(t *testing.T) {
	boom := errors.New("i/o timeout")
	if err := retry.Failed(t.Context(), errNotObtained, boom); err != boom {
		t.Errorf("Failed with a live context = %v; want the command's error unchanged", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := retry.Failed(ctx, errNotObtained, boom)
	if !errors.Is(err, errNotObtained) || !errors.Is(err, context.Canceled) || errors.Is(err, boom) {
		t.Errorf("Failed with an ended context = %v; want ErrNotObtained joined with context.Canceled, not the command's error", err)
	}
}

func TestBackoffStaysWithinItsCeiling(t *testing.T) {
	for n := 1; n <= 20; n++ {
		ceiling := min(retry.MinDelay<<min(n-1, 10), retry.MaxDelay)
		for range 50 {
			if d := retry.Backoff(n); d < 0 || d >= ceiling {
				t.Fatalf("Backoff(%d) = %v; want in [0, %v)", n, d, ceiling)
			}
		}
	}
}

func TestDetachOutlivesItsParent(t *testing.T) {
	type key struct{}
	parent, cancel := context.WithCancel(context.WithValue(t.Context(), key{}, "v"))
	cancel()
	ctx, stop := retry.Detach(parent)
	defer stop()
	if ctx.Err() != nil || ctx.Value(key{}) != "v" {
		t.Errorf("Detach(cancelled) err %v, value %v; want live, with the parent's values", ctx.Err(), ctx.Value(key{}))
	}
	if d, ok := ctx.Deadline(); !ok || time.Until(d) > retry.ReleaseTimeout || time.Until(d) < retry.ReleaseTimeout*9/10 {
		t.Errorf("Detach deadline in %v; want between %v and %v", time.Until(d), retry.ReleaseTimeout*9/10, retry.ReleaseTimeout)
	}
}
