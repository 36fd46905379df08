package correct_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/locklab/locklab/correct"
	"github.com/locklab/locklab/internal/leakcheck"
)

// TestLockHonoursDeadline: a Lock that cannot get the lock before its
// deadline says so with both sentinels, and leaves the holder's key as it
// was.
func TestLockHonoursDeadline(t *testing.T) {
	c := newClient(t)
	ctx := testContext(t)
	key := newKey(t)
	holder, waiter := correct.New(c, key), correct.New(c, key)
	mustLock(t, ctx, holder)

	lctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	err := waiter.Lock(lctx)
	if !errors.Is(err, correct.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Lock past its deadline = %v; want ErrNotObtained and DeadlineExceeded", err)
	}
	if got := waiter.Token(); got != "" {
		t.Errorf("waiter.Token() = %q; want \"\"", got)
	}
	checkHolds(t, ctx, c, key, holder, "the holder's")
	if err := holder.Unlock(ctx); err != nil {
		t.Errorf("holder.Unlock = %v; want nil", err)
	}
}

func TestLockRunsOutOfTries(t *testing.T) {
	c := newClient(t)
	ctx := testContext(t)
	key := newKey(t)
	holder := correct.New(c, key)
	mustLock(t, ctx, holder)
	defer holder.Unlock(ctx)

	var attempts []int // DelayFunc runs in Lock's goroutine: no race
	waiter := correct.New(c, key, correct.WithTries(3), correct.WithRetry(func(attempt int) time.Duration {
		attempts = append(attempts, attempt)
		return time.Millisecond
	}))
	err := waiter.Lock(ctx)
	if !errors.Is(err, correct.ErrNotObtained) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Lock with 3 tries = %v; want ErrNotObtained alone", err)
	}
	if want := []int{1, 2}; !slices.Equal(attempts, want) {
		t.Errorf("DelayFunc called with %v; want %v (between three tries)", attempts, want)
	}
}

// TestLockWaitsForUnlock checks that a blocked Lock gets the lock once the
// holder unlocks. The waiter's first delay tells the test that it has been
// refused once, so the test knows it is waiting without sleeping.
func TestLockWaitsForUnlock(t *testing.T) {
	leakcheck.Guard(t)
	c := newClient(t)
	ctx := testContext(t)
	key := newKey(t)
	holder := correct.New(c, key)
	mustLock(t, ctx, holder)

	refused := make(chan struct{})
	var once sync.Once
	waiter := correct.New(c, key, correct.WithRetry(func(attempt int) time.Duration {
		once.Do(func() { close(refused) })
		return correct.Backoff(attempt)
	}))
	var g errgroup.Group
	g.Go(func() error { return waiter.Lock(ctx) })

	<-refused
	if err := holder.Unlock(ctx); err != nil {
		t.Fatalf("holder.Unlock = %v; want nil", err)
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("waiter.Lock = %v; want nil", err)
	}
	checkHolds(t, ctx, c, key, waiter, "the waiter's")
	if err := waiter.Unlock(ctx); err != nil {
		t.Errorf("waiter.Unlock = %v; want nil", err)
	}
}

// TestLockIsNotReentrant: a second Lock on a Mutex that holds the lock
// waits like anyone else (here until its deadline) and does not disturb
// the held lock, which Unlock then releases.
func TestLockIsNotReentrant(t *testing.T) {
	c := newClient(t)
	ctx := testContext(t)
	key := newKey(t)
	m := correct.New(c, key)
	mustLock(t, ctx, m)
	tok := m.Token()

	lctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := m.Lock(lctx); !errors.Is(err, correct.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("second Lock = %v; want ErrNotObtained and DeadlineExceeded", err)
	}
	if got := m.Token(); got != tok {
		t.Errorf("Token() after second Lock = %q; want the held token %q", got, tok)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Errorf("Unlock = %v; want nil", err)
	}
}

// TestSharedMutex uses one Mutex from two goroutines, as a sync.Mutex: the
// second Lock waits for the first holder's Unlock and then holds the lock
// under a new token.
func TestSharedMutex(t *testing.T) {
	leakcheck.Guard(t)
	c := newClient(t)
	ctx := testContext(t)
	key := newKey(t)
	refused := make(chan struct{})
	var once sync.Once
	m := correct.New(c, key, correct.WithRetry(func(attempt int) time.Duration {
		once.Do(func() { close(refused) })
		return correct.Backoff(attempt)
	}))
	mustLock(t, ctx, m)
	first := m.Token()

	var g errgroup.Group
	g.Go(func() error { return m.Lock(ctx) })
	<-refused
	if err := m.Unlock(ctx); err != nil {
		t.Fatalf("Unlock = %v; want nil", err)
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("second goroutine's Lock = %v; want nil", err)
	}
	if second := m.Token(); second == "" || second == first {
		t.Errorf("Token() after the second Lock = %q; want a new token (first was %q)", second, first)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Errorf("second Unlock = %v; want nil", err)
	}
}

func TestDefaultBackoff(t *testing.T) {
	for attempt := 1; attempt <= 20; attempt++ {
		ceiling := min(2*time.Millisecond<<min(attempt-1, 10), 64*time.Millisecond)
		for range 100 {
			if d := correct.Backoff(attempt); d < 0 || d >= ceiling {
				t.Fatalf("Backoff(%d) = %v; want in [0, %v)", attempt, d, ceiling)
			}
		}
	}
}
