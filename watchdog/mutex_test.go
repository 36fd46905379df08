package watchdog_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/locklab/locklab/internal/leakcheck"
	"github.com/locklab/locklab/internal/locktest"
	"github.com/locklab/locklab/watchdog"
)

func TestScriptsLoad(t *testing.T) { locktest.ScriptsLoad(t, rdb, watchdog.Scripts) }

func TestBadInput(t *testing.T) {
	locktest.RefusesInvalid(t, watchdog.ErrInvalid, map[string]*watchdog.Mutex{
		"nil client":             watchdog.New(nil, "k"),
		"typed nil client":       watchdog.New((*redis.Client)(nil), "k"),
		"empty key":              watchdog.New(rdb, ""),
		"zero ttl":               watchdog.New(rdb, "k", watchdog.WithTTL(0)),
		"negative ttl":           watchdog.New(rdb, "k", watchdog.WithTTL(-time.Second)),
		"ttl below 10ms":         watchdog.New(rdb, "k", watchdog.WithTTL(5*time.Millisecond)),
		"zero interval":          watchdog.New(rdb, "k", watchdog.WithInterval(0)),
		"interval equal to ttl":  watchdog.New(rdb, "k", watchdog.WithTTL(time.Second), watchdog.WithInterval(time.Second)),
		"interval inside margin": watchdog.New(rdb, "k", watchdog.WithTTL(time.Second), watchdog.WithInterval(990*time.Millisecond)),
		"negative max hold":      watchdog.New(rdb, "k", watchdog.WithMaxHold(-time.Second)),
		"negative tries":         watchdog.New(rdb, "k", watchdog.WithTries(-1)),
	}, func(t *testing.T, m *watchdog.Mutex) {
		select {
		case <-m.Done():
		default:
			t.Error("Done is open on a Mutex that never held the lock")
		}
	})
	ctx := t.Context()
	t.Run("Keep nil Extender", func(t *testing.T) {
		if l, err := watchdog.Keep(ctx, nil); l != nil || !errors.Is(err, watchdog.ErrInvalid) {
			t.Errorf("Keep(nil) = %v, %v; want nil, ErrInvalid", l, err)
		}
	})
	t.Run("Keep bad option", func(t *testing.T) {
		if l, err := watchdog.Keep(ctx, nopExtender{}, watchdog.WithTTL(0)); l != nil || !errors.Is(err, watchdog.ErrInvalid) {
			t.Errorf("Keep(WithTTL(0)) = %v, %v; want nil, ErrInvalid", l, err)
		}
	})
}

type nopExtender struct{}

func (nopExtender) Extend(context.Context, time.Duration) error { return nil }

func TestLockUnlock(t *testing.T) {
	verify := leakcheck.Since(t)
	ctx := t.Context()
	key := newKey(t)
	m := watchdog.New(rdb, key, watchdog.WithTTL(5*time.Second))
	if err := m.Lock(ctx); err != nil {
		t.Fatalf("Lock = %v", err)
	}
	select {
	case <-m.Done():
		t.Fatalf("Done closed right after Lock; cause %v", context.Cause(m.Context()))
	default:
	}
	if ttl := rdb.PTTL(ctx, key).Val(); ttl <= 0 || ttl > 5*time.Second {
		t.Errorf("PTTL after Lock = %v; want (0, 5s]", ttl)
	}
	if ok, err := watchdog.New(rdb, key).TryLock(ctx); ok || err != nil {
		t.Errorf("TryLock by another Mutex = %v, %v; want false, nil", ok, err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatalf("Unlock = %v", err)
	}
	locktest.CheckGone(t, rdb, key, "after Unlock")
	waitClosed(t, m.Done(), 0, "Done after Unlock")
	if cause := context.Cause(m.Context()); !errors.Is(cause, watchdog.ErrReleased) {
		t.Errorf("cause after Unlock = %v; want ErrReleased", cause)
	}
	verify()
}

func TestDoubleUnlock(t *testing.T) {
	ctx := t.Context()
	m := watchdog.New(rdb, newKey(t), watchdog.WithTTL(5*time.Second))
	if err := m.Unlock(ctx); !errors.Is(err, watchdog.ErrNotHeld) {
		t.Errorf("Unlock before Lock = %v; want ErrNotHeld", err)
	}
	if err := m.Lock(ctx); err != nil {
		t.Fatalf("Lock = %v", err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatalf("first Unlock = %v", err)
	}
	if err := m.Unlock(ctx); !errors.Is(err, watchdog.ErrNotHeld) {
		t.Errorf("second Unlock = %v; want ErrNotHeld", err)
	}
}

func TestRelockAfterUnlock(t *testing.T) {
	ctx := t.Context()
	m := watchdog.New(rdb, newKey(t), watchdog.WithTTL(5*time.Second))
	for i := range 3 {
		if err := m.Lock(ctx); err != nil {
			t.Fatalf("Lock #%d = %v", i+1, err)
		}
		if err := m.Context().Err(); err != nil {
			t.Fatalf("Context after Lock #%d is done: %v", i+1, context.Cause(m.Context()))
		}
		if err := m.Unlock(ctx); err != nil {
			t.Fatalf("Unlock #%d = %v", i+1, err)
		}
	}
}

func TestUnlockWithCancelledContext(t *testing.T) {
	key := newKey(t)
	m := watchdog.New(rdb, key, watchdog.WithTTL(5*time.Second))
	if err := m.Lock(t.Context()); err != nil {
		t.Fatalf("Lock = %v", err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if err := m.Unlock(cancelled); err != nil {
		t.Errorf("Unlock(cancelled ctx) = %v; want nil", err)
	}
	locktest.CheckGone(t, rdb, key, "after Unlock(cancelled ctx)")
}

func TestLockGivesUp(t *testing.T) {
	ctx := t.Context()
	key := newKey(t)
	holder := watchdog.New(rdb, key, watchdog.WithTTL(5*time.Second))
	if err := holder.Lock(ctx); err != nil {
		t.Fatalf("holder Lock = %v", err)
	}
	defer holder.Unlock(context.Background())
	before := rdb.Get(ctx, key).Val()

	t.Run("context deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		err := watchdog.New(rdb, key).Lock(ctx)
		if !errors.Is(err, watchdog.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Lock = %v; want ErrNotObtained joined with DeadlineExceeded", err)
		}
	})
	t.Run("tries", func(t *testing.T) {
		var delays []int
		retry := func(attempt int) time.Duration { delays = append(delays, attempt); return time.Millisecond }
		err := watchdog.New(rdb, key, watchdog.WithTries(3), watchdog.WithRetry(retry)).Lock(ctx)
		if !errors.Is(err, watchdog.ErrNotObtained) || errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Lock = %v; want ErrNotObtained alone", err)
		}
		if want := []int{1, 2}; !slices.Equal(delays, want) {
			t.Errorf("DelayFunc called with %v; want %v", delays, want)
		}
	})
	t.Run("cancelled before", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		err := watchdog.New(rdb, newKey(t)).Lock(ctx)
		if !errors.Is(err, watchdog.ErrNotObtained) || !errors.Is(err, context.Canceled) {
			t.Errorf("Lock(cancelled) = %v; want ErrNotObtained joined with Canceled", err)
		}
	})
	if after := rdb.Get(ctx, key).Val(); after != before {
		t.Errorf("key value changed from %q to %q by Locks that gave up", before, after)
	}
}

func TestLockWaitsForUnlock(t *testing.T) {
	ctx := t.Context()
	key := newKey(t)
	a := watchdog.New(rdb, key, watchdog.WithTTL(5*time.Second))
	if err := a.Lock(ctx); err != nil {
		t.Fatalf("a.Lock = %v", err)
	}
	rec := newHookRecorder()
	b := watchdog.New(rdb, key, watchdog.WithTTL(5*time.Second), watchdog.WithHook(rec.hook))
	var g errgroup.Group
	g.Go(func() error { return b.Lock(ctx) })
	rec.waitPoint(t, watchdog.HookBeforeAcquire, 5*time.Second) // b is trying
	if err := a.Unlock(ctx); err != nil {
		t.Fatalf("a.Unlock = %v", err)
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("b.Lock = %v", err)
	}
	if err := b.Unlock(ctx); err != nil {
		t.Errorf("b.Unlock = %v", err)
	}
}
