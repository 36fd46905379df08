package reentrant_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/internal/locktest"
	"github.com/locklab/locklab/reentrant"
)

// throughProxy returns a go-redis client on its default options (it sends
// a command again when its reply is lost) reaching the shared server
// through a fault proxy.
func throughProxy(t *testing.T) (*faultproxy.Proxy, *redis.Client) {
	t.Helper()
	p, c := locktest.ThroughProxy(t, rdb.Options().Addr)
	// Warm up: load the scripts and run the server check, so that a rule
	// that loses "the next script" loses the one the test means.
	locktest.Warm(t, ownerCtx(t), reentrant.New(c, "reentrant-test:warm"))
	return p, c
}

// TestNestedUnlockSentTwiceCountsOnce: the owner holds the lock twice; its
// inner Unlock runs, the reply is lost, go-redis sends it again. The count
// must drop by one, not two. (It dropped by two: the key was deleted under
// the outer holder and another owner took the lock.)
func TestNestedUnlockSentTwiceCountsOnce(t *testing.T) {
	p, c := throughProxy(t)
	key := newKey(t)
	ctx := ownerCtx(t)
	m := reentrant.New(c, key)
	for range 2 {
		if err := m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	locktest.LoseReply(t, p, faultproxy.Match{Command: "EVALSHA", Key: key}, "inner Unlock", func() error { return m.Unlock(ctx) })
	if n, err := m.Count(ctx); n != 1 || err != nil {
		t.Errorf("Count after one inner Unlock sent twice = %d, %v; want 1", n, err)
	}
	other := reentrant.New(rdb, key)
	if ok, err := other.TryLock(ownerCtx(t)); ok || err != nil {
		t.Errorf("another owner's TryLock while the outer hold stands = %v, %v; want false, nil", ok, err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Errorf("outer Unlock = %v", err)
	}
}

// TestLockSentTwiceCountsOnce: a Lock's reply is lost and go-redis sends
// it again. It must count once, so that the matching Unlock frees the
// lock. (It counted twice: the key outlived its Unlock by a TTL.)
func TestLockSentTwiceCountsOnce(t *testing.T) {
	p, c := throughProxy(t)
	key := newKey(t)
	ctx := ownerCtx(t)
	m := reentrant.New(c, key)
	locktest.LoseReply(t, p, faultproxy.Match{Command: "EVALSHA", Key: key}, "Lock", func() error { return m.Lock(ctx) })
	if n, err := m.Count(ctx); n != 1 || err != nil {
		t.Errorf("Count after one Lock sent twice = %d, %v; want 1", n, err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	locktest.CheckGone(t, rdb, key, "after the matching Unlock")
}

// TestInnerShortTTLKeepsTheOuterLease: the outer hold has a 9s lease (kept
// by a watchdog, say); an inner Lock and Unlock through a Mutex with a
// 300ms TTL must not cut it to 300ms. (They did: another owner got the
// lock about 400ms later, two holders.)
func TestInnerShortTTLKeepsTheOuterLease(t *testing.T) {
	key := newKey(t)
	ctx := ownerCtx(t)
	outer := reentrant.New(rdb, key, reentrant.WithTTL(9*time.Second))
	inner := reentrant.New(rdb, key, reentrant.WithTTL(300*time.Millisecond))
	if err := outer.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	defer outer.Unlock(context.WithoutCancel(ctx))
	if err := inner.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if pttl := rdb.PTTL(ctx, key).Val(); pttl < 8*time.Second {
		t.Errorf("PTTL after the inner Lock = %v; want the outer 9s lease kept", pttl)
	}
	if err := inner.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if pttl := rdb.PTTL(ctx, key).Val(); pttl < 8*time.Second {
		t.Errorf("PTTL after the inner Unlock = %v; want the outer 9s lease kept", pttl)
	}
}
