package naive_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/internal/leakcheck"
	"github.com/locklab/locklab/internal/locktest"
	"github.com/locklab/locklab/internal/rig"
	"github.com/locklab/locklab/labs"
	"github.com/locklab/locklab/naive"
)

var redisAddr string

func TestMain(m *testing.M) {
	rig.Main(m, 1, func(nodes []*rig.Node) { redisAddr = nodes[0].Addr() })
}

// The naive types satisfy the labs' Locker.
var (
	_ labs.Locker = (*naive.SetNXThenExpire)(nil)
	_ labs.Locker = (*naive.GetThenSet)(nil)
	_ labs.Locker = (*naive.BlindDelete)(nil)
	_ labs.Locker = (*naive.GetThenDelete)(nil)
	_ labs.Locker = (*naive.BlindRenewal)(nil)
	_ labs.Locker = (*naive.Counted)(nil)
)

var keySeq atomic.Int64

func lockKey() string { return fmt.Sprintf("naive-test:%d", keySeq.Add(1)) }

func client(t *testing.T) *redis.Client {
	return locktest.Client(t, redisAddr)
}

type locker interface {
	labs.Locker
	Token() string
}

type maker func(c naive.Client, key string, opts ...naive.Option) locker

var kinds = map[string]maker{
	"SetNXThenExpire": func(c naive.Client, k string, o ...naive.Option) locker { return naive.NewSetNXThenExpire(c, k, o...) },
	"GetThenSet":      func(c naive.Client, k string, o ...naive.Option) locker { return naive.NewGetThenSet(c, k, o...) },
	"BlindDelete":     func(c naive.Client, k string, o ...naive.Option) locker { return naive.NewBlindDelete(c, k, o...) },
	"GetThenDelete":   func(c naive.Client, k string, o ...naive.Option) locker { return naive.NewGetThenDelete(c, k, o...) },
	"BlindRenewal":    func(c naive.Client, k string, o ...naive.Option) locker { return naive.NewBlindRenewal(c, k, o...) },
}

// allKinds is kinds and Counted, whose key is a hash, not a token.
func allKinds() map[string]maker {
	m := maps.Clone(kinds)
	m["Counted"] = func(c naive.Client, k string, o ...naive.Option) locker { return naive.NewCounted(c, k, o...) }
	return m
}

// Without the bad interleaving, every naive lock behaves like a lock.
func TestUncontendedLockUnlock(t *testing.T) {
	ctx := t.Context()
	c := client(t)
	for name, mk := range kinds {
		t.Run(name, func(t *testing.T) {
			key := lockKey()
			a, b := mk(c, key), mk(c, key)
			if err := a.Lock(ctx); err != nil {
				t.Fatalf("Lock() = %v", err)
			}
			if got, _ := c.Get(ctx, key).Result(); got != a.Token() || got == "" {
				t.Errorf("GET %s = %q; want A's token %q", key, got, a.Token())
			}
			if pttl, _ := c.PTTL(ctx, key).Result(); pttl <= 0 {
				t.Errorf("PTTL after Lock = %v; want a TTL", pttl)
			}
			if ok, err := b.TryLock(ctx); ok || err != nil {
				t.Errorf("B.TryLock() while A holds = %v, %v; want false, nil", ok, err)
			}
			if err := a.Unlock(ctx); err != nil {
				t.Errorf("Unlock() = %v", err)
			}
			if err := a.Unlock(ctx); !errors.Is(err, naive.ErrNotHeld) {
				t.Errorf("second Unlock() = %v; want ErrNotHeld", err)
			}
			locktest.CheckGone(t, c, key, "after Unlock")
		})
	}
	leakcheck.VerifyNone(t)
}

func TestBadInput(t *testing.T) {
	ctx := t.Context()
	c := client(t)
	for name, mk := range allKinds() {
		t.Run(name, func(t *testing.T) {
			tests := []struct {
				name string
				l    locker
				want error
			}{
				{"nil client", mk(nil, lockKey()), naive.ErrInvalid},
				{"empty key", mk(c, ""), naive.ErrInvalid},
				{"zero ttl", mk(c, lockKey(), naive.WithTTL(0)), naive.ErrInvalid},
				{"negative ttl", mk(c, lockKey(), naive.WithTTL(-time.Second)), naive.ErrInvalid},
				{"unlock without lock", mk(c, lockKey()), naive.ErrNotHeld},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					if err := tt.l.Unlock(ctx); !errors.Is(err, tt.want) {
						t.Errorf("Unlock() = %v; want %v", err, tt.want)
					}
					if tt.want == naive.ErrInvalid {
						if err := tt.l.Lock(ctx); !errors.Is(err, naive.ErrInvalid) {
							t.Errorf("Lock() = %v; want ErrInvalid", err)
						}
						if _, err := tt.l.TryLock(ctx); !errors.Is(err, naive.ErrInvalid) {
							t.Errorf("TryLock() = %v; want ErrInvalid", err)
						}
					}
				})
			}
		})
	}
}

// TestZeroValueRefused: a lock no constructor made says so, with an error
// wrapping ErrInvalid, from every method; it does not panic.
func TestZeroValueRefused(t *testing.T) {
	ctx := t.Context()
	for name, l := range map[string]locker{
		"BlindDelete": &naive.BlindDelete{}, "GetThenDelete": &naive.GetThenDelete{},
		"GetThenSet": &naive.GetThenSet{}, "SetNXThenExpire": &naive.SetNXThenExpire{},
		"Counted": &naive.Counted{}, "BlindRenewal": &naive.BlindRenewal{},
	} {
		if err := l.Lock(ctx); !errors.Is(err, naive.ErrInvalid) {
			t.Errorf("%s{}.Lock() = %v; want ErrInvalid", name, err)
		}
		if _, err := l.TryLock(ctx); !errors.Is(err, naive.ErrInvalid) {
			t.Errorf("%s{}.TryLock() = %v; want ErrInvalid", name, err)
		}
		if err := l.Unlock(ctx); !errors.Is(err, naive.ErrInvalid) {
			t.Errorf("%s{}.Unlock() = %v; want ErrInvalid", name, err)
		}
	}
}

func TestLockGivesUpWithContext(t *testing.T) {
	c := client(t)
	key := lockKey()
	a, b := naive.NewBlindDelete(c, key), naive.NewBlindDelete(c, key)
	if err := a.Lock(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer a.Unlock(context.Background())
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
	defer cancel()
	err := b.Lock(ctx)
	if !errors.Is(err, naive.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock() on a held key = %v; want ErrNotObtained joined with DeadlineExceeded", err)
	}
}

func TestUnreachableRedis(t *testing.T) {
	n := rig.Start(t)
	c := n.Client()
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	for name, mk := range allKinds() {
		err := mk(c, lockKey()).Lock(t.Context())
		if err == nil || errors.Is(err, naive.ErrNotObtained) {
			t.Errorf("%s.Lock() on a dead server = %v; want the transport error", name, err)
		}
	}
}

// park returns a hook that blocks at point until release is closed, and
// reports arrival on at.
func park(point string, at chan<- struct{}, release <-chan struct{}) naive.Option {
	return naive.WithHook(func(ctx context.Context, p string) {
		if p != point {
			return
		}
		at <- struct{}{}
		<-release
	})
}

func TestSetNXThenExpireLeavesNoTTLInItsWindow(t *testing.T) {
	ctx := t.Context()
	c := client(t)
	key := lockKey()
	at, release := make(chan struct{}), make(chan struct{})
	m := naive.NewSetNXThenExpire(c, key, park(naive.HookAfterSetNX, at, release))
	done := make(chan error, 1)
	go func() { done <- m.Lock(ctx) }()
	<-at
	if pttl, err := c.PTTL(ctx, key).Result(); err != nil || pttl != -1 {
		t.Errorf("PTTL between SETNX and EXPIRE = %v, %v; want -1 (no TTL)", pttl, err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if pttl, _ := c.PTTL(ctx, key).Result(); pttl <= 0 {
		t.Errorf("PTTL after EXPIRE = %v; want a TTL", pttl)
	}
	_ = m.Unlock(ctx)
}

func TestGetThenSetLetsTwoIn(t *testing.T) {
	ctx := t.Context()
	c := client(t)
	key := lockKey()
	atA, atB, release := make(chan struct{}), make(chan struct{}), make(chan struct{})
	a := naive.NewGetThenSet(c, key, park(naive.HookAfterGetEmpty, atA, release))
	b := naive.NewGetThenSet(c, key, park(naive.HookAfterGetEmpty, atB, release))
	okA, okB := make(chan bool, 1), make(chan bool, 1)
	go func() { ok, _ := a.TryLock(ctx); okA <- ok }()
	go func() { ok, _ := b.TryLock(ctx); okB <- ok }()
	<-atA // both saw the key empty
	<-atB
	close(release)
	if !<-okA || !<-okB {
		t.Fatal("both TryLock calls should succeed after both saw the key empty")
	}
	// The last SET won: only that client's Unlock finds its token.
	errA, errB := a.Unlock(ctx), b.Unlock(ctx)
	if (errA == nil) == (errB == nil) {
		t.Errorf("Unlock() = %v (A), %v (B); want exactly one ErrNotHeld", errA, errB)
	}
}

func TestBlindDeleteDeletesTheNextHolder(t *testing.T) {
	ctx := t.Context()
	c := client(t)
	key := lockKey()
	a := naive.NewBlindDelete(c, key, naive.WithTTL(50*time.Millisecond))
	b := naive.NewBlindDelete(c, key)
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	waitGone(t, c, key)
	if err := b.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Unlock(ctx); err != nil { // A's late DEL
		t.Fatal(err)
	}
	checkDeletedUnderB(t, ctx, c, key, b)
}

// checkDeletedUnderB fails the test unless A's release deleted the key B
// holds (the mistake the lock teaches), then lets B go.
func checkDeletedUnderB(t *testing.T, ctx context.Context, c *redis.Client, key string, b interface{ Unlock(context.Context) error }) {
	t.Helper()
	if n, _ := c.Exists(ctx, key).Result(); n != 0 {
		t.Fatal("B's lock survived A's DEL; the mistake did not show")
	}
	_ = b.Unlock(ctx)
}

func TestGetThenDeleteDeletesTheNextHolder(t *testing.T) {
	ctx := t.Context()
	c := client(t)
	key := lockKey()
	b := naive.NewGetThenDelete(c, key)
	a := naive.NewGetThenDelete(c, key, naive.WithHook(func(ctx context.Context, p string) {
		if p == naive.HookAfterGetMatch { // between A's GET and DEL, the lock changes hands
			c.Del(ctx, key)
			if err := b.Lock(ctx); err != nil {
				t.Error(err)
			}
		}
	}))
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	checkDeletedUnderB(t, ctx, c, key, b)
}

func TestBlindRenewalRenewsSomeoneElsesLock(t *testing.T) {
	ctx := t.Context()
	c := client(t)
	key := lockKey()
	renewals := make(chan struct{}, 16)
	a := naive.NewBlindRenewal(c, key, naive.WithTTL(150*time.Millisecond), naive.WithHook(func(ctx context.Context, p string) {
		if p == naive.HookBeforeRenew {
			renewals <- struct{}{}
		}
	}))
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	// A loses the lock (an operator's DEL stands in for an expiry), and B
	// takes it with a long lease.
	c.Del(ctx, key)
	b := naive.NewBlindDelete(c, key, naive.WithTTL(time.Hour))
	if err := b.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	drain(renewals)
	<-renewals // a renewal starts after B locked...
	<-renewals // ...and has finished when the next one starts
	if pttl, _ := c.PTTL(ctx, key).Result(); pttl > 150*time.Millisecond {
		t.Fatalf("B's PTTL = %v; A's blind EXPIRE should have cut it to A's 150ms", pttl)
	}
	if got, _ := c.Get(ctx, key).Result(); got != b.Token() {
		t.Fatalf("key holds %q; want B's token", got)
	}
	if err := a.Unlock(ctx); !errors.Is(err, naive.ErrNotHeld) {
		t.Errorf("A.Unlock() = %v; want ErrNotHeld", err)
	}
	_ = b.Unlock(ctx)
	leakcheck.VerifyNone(t)
}

func drain(ch chan struct{}) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// waitGone waits until key no longer exists on c, failing the test after
// 10s.
func waitGone(t *testing.T, c *redis.Client, key string) {
	t.Helper()
	locktest.WaitGone(t, c, key, 10*time.Second)
}

// Counted is reentrant and owner-checked; its mistake is the second run of
// a script, which go-redis sends when a reply is lost (lab 12).
func TestCountedCountsEveryRun(t *testing.T) {
	ctx := t.Context()
	c := client(t)
	key := lockKey()
	p, retrying := locktest.ThroughProxy(t, redisAddr) // go-redis's defaults: retries on
	a, b := naive.NewCounted(retrying, key), naive.NewCounted(c, key)
	for range 2 {
		if err := a.Lock(ctx); err != nil {
			t.Fatalf("Lock() = %v", err)
		}
	}
	if n, err := c.HGet(ctx, key, a.Token()).Int(); n != 2 || err != nil {
		t.Fatalf("HGET count after two Locks = %d, %v; want 2", n, err)
	}
	if ok, err := b.TryLock(ctx); ok || err != nil {
		t.Fatalf("B.TryLock() while A holds = %v, %v; want false, nil", ok, err)
	}
	// B's refused Unlock has also loaded the release script, so the reply
	// lost below is the script's, not a NOSCRIPT.
	if err := b.Unlock(ctx); !errors.Is(err, naive.ErrNotHeld) {
		t.Fatalf("B.Unlock() = %v; want ErrNotHeld", err)
	}

	locktest.LoseReply(t, p, faultproxy.Match{Key: key}, "inner Unlock", func() error { return a.Unlock(ctx) })
	if n, _ := c.Exists(ctx, key).Result(); n != 0 {
		t.Fatalf("after one Unlock of two, sent twice, the key still exists; Counted is meant to count the second run too")
	}
	if ok, err := b.TryLock(ctx); !ok || err != nil {
		t.Fatalf("B.TryLock() after A's doubled Unlock = %v, %v; want true: A's outer hold is gone", ok, err)
	}
	if err := b.Unlock(ctx); err != nil {
		t.Fatalf("B.Unlock() = %v", err)
	}
}
