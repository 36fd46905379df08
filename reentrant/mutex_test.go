package reentrant_test

import (
	"context"
	"errors"
	"maps"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/locklab/locklab/internal/leakcheck"
	"github.com/locklab/locklab/internal/locktest"
	"github.com/locklab/locklab/reentrant"
)

func TestScriptsLoad(t *testing.T) { locktest.ScriptsLoad(t, rdb, reentrant.Scripts) }

func TestBadInput(t *testing.T) {
	// Each lock runs with the context its Bind makes: one Owner's, none or
	// the empty Owner.
	owner := reentrant.NewOwner()
	owned := func(ctx context.Context) context.Context { return reentrant.WithOwner(ctx, owner) }
	noOwner := func(ctx context.Context) context.Context { return ctx }
	emptyOwner := func(ctx context.Context) context.Context { return reentrant.WithOwner(ctx, "") }
	locktest.RefusesInvalid(t, reentrant.ErrInvalid, map[string]locktest.Bound{
		"nil client":       {L: reentrant.New(nil, "k"), Bind: owned},
		"typed nil client": {L: reentrant.New((*redis.Client)(nil), "k"), Bind: owned},
		"empty key":        {L: reentrant.New(rdb, ""), Bind: owned},
		"zero ttl":         {L: reentrant.New(rdb, "k", reentrant.WithTTL(0)), Bind: owned},
		"negative ttl":     {L: reentrant.New(rdb, "k", reentrant.WithTTL(-time.Second)), Bind: owned},
		"ttl below 1ms":    {L: reentrant.New(rdb, "k", reentrant.WithTTL(time.Microsecond)), Bind: owned},
		"negative tries":   {L: reentrant.New(rdb, "k", reentrant.WithTries(-1)), Bind: owned},
		"no owner in ctx":  {L: reentrant.New(rdb, "k"), Bind: noOwner},
		"empty owner":      {L: reentrant.New(rdb, "k"), Bind: emptyOwner},
	}, func(t *testing.T, b locktest.Bound) {
		if n, err := b.L.(*reentrant.Mutex).Count(b.Bind(context.Background())); n != 0 || !errors.Is(err, reentrant.ErrInvalid) {
			t.Errorf("Count = %d, %v; want 0, ErrInvalid", n, err)
		}
	})
	t.Run("Extend zero ttl", func(t *testing.T) {
		if err := reentrant.New(rdb, "k").Extend(owned(t.Context()), 0); !errors.Is(err, reentrant.ErrInvalid) {
			t.Errorf("Extend(0) = %v; want ErrInvalid", err)
		}
	})
}

func TestOwner(t *testing.T) {
	if o, ok := reentrant.OwnerFrom(context.Background()); ok {
		t.Errorf("OwnerFrom(Background) = %q, true; want false", o)
	}
	a, b := reentrant.NewOwner(), reentrant.NewOwner()
	if a == b || len(a) != 22 {
		t.Errorf("NewOwner twice = %q, %q; want two distinct 22-character ids", a, b)
	}
	ctx := reentrant.WithOwner(context.Background(), a)
	if o, ok := reentrant.OwnerFrom(ctx); o != a || !ok {
		t.Errorf("OwnerFrom(WithOwner(%q)) = %q, %v; want %q, true", a, o, ok, a)
	}
}

// hash returns the lock's hash, owner id -> count.
func hash(t *testing.T, key string) map[string]string {
	t.Helper()
	h, err := rdb.HGetAll(context.Background(), key).Result()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestCounts(t *testing.T) {
	verify := leakcheck.Since(t)
	defer verify()
	ctx := ownerCtx(t)
	owner, _ := reentrant.OwnerFrom(ctx)
	key := newKey(t)
	m := reentrant.New(rdb, key)
	steps := []struct {
		name      string
		do        func(context.Context) error
		wantCount int
		wantKey   bool
	}{
		{"Lock", m.Lock, 1, true},
		{"Lock again", m.Lock, 2, true},
		{"Unlock", m.Unlock, 1, true},
		{"Unlock again", m.Unlock, 0, false},
	}
	for _, s := range steps {
		if err := s.do(ctx); err != nil {
			t.Fatalf("%s = %v", s.name, err)
		}
		if n, err := m.Count(ctx); n != s.wantCount || err != nil {
			t.Errorf("Count after %s = %d, %v; want %d, nil", s.name, n, err, s.wantCount)
		}
		if got := rdb.Exists(ctx, key).Val() == 1; got != s.wantKey {
			t.Errorf("key exists after %s = %v; want %v", s.name, got, s.wantKey)
		}
		if s.wantCount > 0 {
			want := map[string]string{string(owner): strconv.Itoa(s.wantCount)}
			if h := hash(t, key); !maps.Equal(h, want) {
				t.Errorf("hash after %s = %v; want %v", s.name, h, want)
			}
		}
	}
	if err := m.Unlock(ctx); !errors.Is(err, reentrant.ErrNotHeld) {
		t.Errorf("third Unlock = %v; want ErrNotHeld", err)
	}
	locktest.CheckGone(t, rdb, key, "after a refused Unlock")
}

func TestTTLRefreshed(t *testing.T) {
	ctx := ownerCtx(t)
	key := newKey(t)
	m := reentrant.New(rdb, key, reentrant.WithTTL(10*time.Second))
	if err := m.Lock(ctx); err != nil {
		t.Fatalf("Lock = %v", err)
	}
	steps := []struct {
		name string
		do   func(context.Context) error
	}{
		{"re-entry", m.Lock},
		{"partial Unlock", m.Unlock},
		{"Extend", func(ctx context.Context) error { return m.Extend(ctx, 10*time.Second) }},
	}
	for _, s := range steps {
		rdb.PExpire(ctx, key, time.Second) // as if time had passed
		if err := s.do(ctx); err != nil {
			t.Fatalf("%s = %v", s.name, err)
		}
		if pttl := rdb.PTTL(ctx, key).Val(); pttl <= 5*time.Second {
			t.Errorf("PTTL after %s = %v; want refreshed to about 10s", s.name, pttl)
		}
	}
	if err := m.Unlock(ctx); err != nil {
		t.Errorf("last Unlock = %v", err)
	}
}

// TestOtherOwner checks that an owner that does not hold the lock can
// neither take, release nor extend it, and changes nothing: neither the
// count nor the TTL.
func TestOtherOwner(t *testing.T) {
	a, b := ownerCtx(t), ownerCtx(t)
	key := newKey(t)
	m := reentrant.New(rdb, key, reentrant.WithTTL(10*time.Second))
	for range 2 {
		if err := m.Lock(a); err != nil {
			t.Fatalf("a Lock = %v", err)
		}
	}
	rdb.PExpire(a, key, 3*time.Second)
	before := hash(t, key)

	if ok, err := m.TryLock(b); ok || err != nil {
		t.Errorf("b TryLock = %v, %v; want false, nil", ok, err)
	}
	if err := m.Unlock(b); !errors.Is(err, reentrant.ErrNotHeld) {
		t.Errorf("b Unlock = %v; want ErrNotHeld", err)
	}
	if err := m.Extend(b, 10*time.Second); !errors.Is(err, reentrant.ErrNotHeld) {
		t.Errorf("b Extend = %v; want ErrNotHeld", err)
	}
	if n, err := m.Count(b); n != 0 || err != nil {
		t.Errorf("b Count = %d, %v; want 0, nil", n, err)
	}
	if after := hash(t, key); !maps.Equal(after, before) {
		t.Errorf("hash after b's calls = %v; want %v (unchanged)", after, before)
	}
	if pttl := rdb.PTTL(a, key).Val(); pttl <= 0 || pttl > 3*time.Second {
		t.Errorf("PTTL after b's calls = %v; want at most 3s (unchanged)", pttl)
	}
	for range 2 {
		if err := m.Unlock(a); err != nil {
			t.Fatalf("a Unlock = %v", err)
		}
	}
}

// TestReentryAfterExpiry shows the trap of reentrancy with a lease: the
// lock expires while held, the nested Lock starts a new hold with count 1,
// and the outer Unlock finds nothing to release.
func TestReentryAfterExpiry(t *testing.T) {
	ctx := ownerCtx(t)
	key := newKey(t)
	m := reentrant.New(rdb, key)
	if err := m.Lock(ctx); err != nil { // outer
		t.Fatalf("outer Lock = %v", err)
	}
	rdb.PExpire(ctx, key, time.Millisecond)
	waitKeyGone(t, key, 5*time.Second)
	if err := m.Lock(ctx); err != nil { // nested, after expiry
		t.Fatalf("nested Lock after expiry = %v", err)
	}
	if n, err := m.Count(ctx); n != 1 || err != nil {
		t.Errorf("Count after re-entry on an expired lock = %d, %v; want 1, nil (a new hold)", n, err)
	}
	if err := m.Unlock(ctx); err != nil { // nested
		t.Fatalf("nested Unlock = %v", err)
	}
	if err := m.Unlock(ctx); !errors.Is(err, reentrant.ErrNotHeld) { // outer
		t.Errorf("outer Unlock = %v; want ErrNotHeld", err)
	}
}

func TestUnlockAfterExpiry(t *testing.T) {
	ctx := ownerCtx(t)
	key := newKey(t)
	m := reentrant.New(rdb, key)
	if err := m.Lock(ctx); err != nil {
		t.Fatalf("Lock = %v", err)
	}
	rdb.PExpire(ctx, key, time.Millisecond)
	waitKeyGone(t, key, 5*time.Second)
	if err := m.Unlock(ctx); !errors.Is(err, reentrant.ErrNotHeld) {
		t.Errorf("Unlock after expiry = %v; want ErrNotHeld", err)
	}
	if err := m.Extend(ctx, time.Second); !errors.Is(err, reentrant.ErrNotHeld) {
		t.Errorf("Extend after expiry = %v; want ErrNotHeld", err)
	}
	locktest.CheckGone(t, rdb, key, "after refused calls")
}

func TestUnlockWithCancelledContext(t *testing.T) {
	key := newKey(t)
	ctx, cancel := context.WithCancel(ownerCtx(t))
	m := reentrant.New(rdb, key)
	if err := m.Lock(ctx); err != nil {
		t.Fatalf("Lock = %v", err)
	}
	cancel()
	if err := m.Unlock(ctx); err != nil {
		t.Errorf("Unlock(cancelled ctx) = %v; want nil", err)
	}
	locktest.CheckGone(t, rdb, key, "after Unlock(cancelled ctx)")
}

func TestLockGivesUp(t *testing.T) {
	a, b := ownerCtx(t), ownerCtx(t)
	key := newKey(t)
	m := reentrant.New(rdb, key)
	if err := m.Lock(a); err != nil {
		t.Fatalf("a Lock = %v", err)
	}
	before := hash(t, key)
	t.Run("context deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(b, 50*time.Millisecond)
		defer cancel()
		err := m.Lock(ctx)
		if !errors.Is(err, reentrant.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("b Lock = %v; want ErrNotObtained joined with DeadlineExceeded", err)
		}
	})
	t.Run("tries", func(t *testing.T) {
		quick := reentrant.WithRetry(func(int) time.Duration { return time.Millisecond })
		err := reentrant.New(rdb, key, reentrant.WithTries(3), quick).Lock(b)
		if !errors.Is(err, reentrant.ErrNotObtained) || errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("b Lock = %v; want ErrNotObtained alone", err)
		}
	})
	if after := hash(t, key); !maps.Equal(after, before) {
		t.Errorf("hash after b gave up = %v; want %v", after, before)
	}
	if err := m.Unlock(a); err != nil {
		t.Errorf("a Unlock = %v", err)
	}
}

// TestMutualExclusion runs owners that lock, re-enter and unlock at once,
// and checks that no two are inside at the same time; run it with -race.
func TestMutualExclusion(t *testing.T) {
	key := newKey(t)
	quick := reentrant.WithRetry(func(int) time.Duration { return time.Millisecond })
	var inside, entries atomic.Int64
	var g errgroup.Group
	for range 4 {
		ctx := ownerCtx(t)
		m := reentrant.New(rdb, key, quick) // one Mutex per owner: the key is the lock
		g.Go(func() error {
			for range 10 {
				if err := m.Lock(ctx); err != nil {
					return err
				}
				if n := inside.Add(1); n != 1 {
					return errors.New("two owners inside at once")
				}
				entries.Add(1)
				if err := m.Lock(ctx); err != nil { // re-entry never waits
					return err
				}
				if err := m.Unlock(ctx); err != nil {
					return err
				}
				inside.Add(-1)
				if err := m.Unlock(ctx); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	if n := entries.Load(); n != 40 {
		t.Errorf("entries = %d; want 40", n)
	}
	locktest.CheckGone(t, rdb, key, "at the end")
}
