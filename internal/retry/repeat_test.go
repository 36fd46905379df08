package retry_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/internal/retry"
)

func TestDoublingStaysWithinItsBounds(t *testing.T) {
	tests := []struct {
		name           string
		first, ceiling time.Duration
		attempt        int
		lo, hi         time.Duration
	}{
		{"first", 10 * time.Millisecond, time.Second, 1, 5 * time.Millisecond, 10 * time.Millisecond},
		{"doubled", 10 * time.Millisecond, time.Second, 3, 20 * time.Millisecond, 40 * time.Millisecond},
		{"at the ceiling", 10 * time.Millisecond, 25 * time.Millisecond, 5, 12500 * time.Microsecond, 25 * time.Millisecond},
		{"ceiling below first", 10 * time.Millisecond, time.Millisecond, 4, 5 * time.Millisecond, 10 * time.Millisecond},
		{"no delay", 0, time.Second, 2, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			delay := retry.Doubling(tt.first, tt.ceiling)
			for range 50 {
				if d := delay(tt.attempt); d < tt.lo || d > tt.hi {
					t.Fatalf("Doubling(%v, %v)(%d) = %v; want in [%v, %v]", tt.first, tt.ceiling, tt.attempt, d, tt.lo, tt.hi)
				}
			}
		})
	}
}

func TestRepeatStopsWhenDone(t *testing.T) {
	calls := 0
	err := retry.Repeat(t.Context(), retry.Policy{Delay: func(int) time.Duration { return 0 }},
		func(_ context.Context, n int) (bool, error) { calls = n; return n == 2, nil })
	if err != nil || calls != 2 {
		t.Errorf("Repeat = %v after %d attempts; want nil after 2", err, calls)
	}
}

func TestRepeatReturnsTheAttemptsError(t *testing.T) {
	boom := errors.New("boom")
	err := retry.Repeat(t.Context(), retry.Policy{}, func(context.Context, int) (bool, error) { return true, boom })
	if err != boom {
		t.Errorf("Repeat = %v; want the attempt's error unchanged", err)
	}
}

func TestRepeatReturnsTheContextsError(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	err := retry.Repeat(ctx, retry.Policy{Delay: func(int) time.Duration { return time.Hour }},
		func(context.Context, int) (bool, error) { cancel(); return false, nil })
	if err != context.Canceled {
		t.Errorf("Repeat = %v; want context.Canceled as it is", err)
	}
}

func TestRepeatRunsOutOfTries(t *testing.T) {
	calls := 0
	err := retry.Repeat(t.Context(), retry.Policy{Tries: 3, Delay: func(int) time.Duration { return 0 }},
		func(context.Context, int) (bool, error) { calls++; return false, nil })
	if !errors.Is(err, retry.ErrExhausted) || calls != 3 || !strings.Contains(err.Error(), "3 tries") {
		t.Errorf("Repeat = %v after %d calls; want ErrExhausted naming 3 tries", err, calls)
	}
}

// TestWithinStartsNoDelayPastIt: a loop bounded by Within stops rather than
// wait past it, as soon as the next delay would end after it, without
// waiting that delay out.
func TestWithinStartsNoDelayPastIt(t *testing.T) {
	const within = time.Second
	calls := 0
	start := time.Now()
	err := retry.Repeat(t.Context(), retry.Policy{Within: within, Delay: func(n int) time.Duration {
		if n < 3 {
			return 0
		}
		return within // past the bound: never waited
	}}, func(context.Context, int) (bool, error) { calls++; return false, nil })
	if !errors.Is(err, retry.ErrExhausted) || calls != 3 {
		t.Errorf("Repeat = %v after %d calls; want ErrExhausted after 3", err, calls)
	}
	if took := time.Since(start); took >= within/2 {
		t.Errorf("Repeat took %v; want it to stop at once, not wait toward its %v bound", took, within)
	}
	// Do with Within: the error wraps notObtained, as for tries.
	err = retry.Do(t.Context(), retry.Policy{Within: time.Nanosecond, Delay: func(int) time.Duration { return time.Millisecond }},
		errNotObtained, func(context.Context, int) (bool, error) { return false, nil })
	if !errors.Is(err, errNotObtained) || errors.Is(err, retry.ErrExhausted) {
		t.Errorf("Do past Within = %v; want ErrNotObtained naming the tries", err)
	}
}
