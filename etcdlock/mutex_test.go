package etcdlock_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"google.golang.org/grpc"

	"github.com/locklab/locklab/etcdlock"
	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/internal/leakcheck"
	"github.com/locklab/locklab/internal/locktest"
	"github.com/locklab/locklab/internal/rig"
)

func TestInvalidArguments(t *testing.T) {
	c := client(t)
	locktest.RefusesInvalid(t, etcdlock.ErrInvalid, map[string]locktest.Locker{
		"nil client":   etcdlock.New(nil, "k"),
		"empty key":    etcdlock.New(c, ""),
		"ttl under 1s": etcdlock.New(c, "k", etcdlock.WithTTL(500*time.Millisecond)),
		"zero ttl":     etcdlock.New(c, "k", etcdlock.WithTTL(0)),
		"zero value":   &etcdlock.Mutex{},
	}, nil)
}

// TestBasics runs the scenarios every lock on a system keeps, from
// internal/locktest: one holder and growing fences, waiters served in the
// order of their claims' revisions, a Lock that gives up withdrawing its
// claim, the observer, contention.
func TestBasics(t *testing.T) { locktest.Run(t, kind, lockKey) }

// TestSharedSessionExcludes: two Mutexes on one session and one key
// exclude each other, which concurrency.Mutex does not (its claim is
// named after the session alone, so both "hold" it).
func TestSharedSessionExcludes(t *testing.T) {
	leakcheck.Guard(t)
	c := client(t)
	ctx := context.Background()
	key := lockKey(t)
	s, err := concurrency.NewSession(c, concurrency.WithTTL(5))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	a := etcdlock.New(c, key, etcdlock.WithSession(s))
	b := etcdlock.New(c, key, etcdlock.WithSession(s))
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.TryLock(ctx); ok || err != nil {
		t.Errorf("b.TryLock on the same session while a holds = %v, %v; want false, nil", ok, err)
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}

	// The peer, for comparison.
	pa, pb := concurrency.NewMutex(s, key+"-peer"), concurrency.NewMutex(s, key+"-peer")
	if err := pa.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := pb.TryLock(ctx); err != nil {
		t.Errorf("concurrency.Mutex refused the second Mutex of its session (%v): fixed upstream? The package doc says it does not", err)
	}
	_ = pa.Unlock(ctx)

	// When the shared session ends, Lock says so.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Lock(ctx); !errors.Is(err, etcdlock.ErrSessionLost) {
		t.Errorf("Lock on a closed session = %v; want ErrSessionLost", err)
	}
}

// TestDoneClosesWhenSessionEnds: a hold on a session given with
// WithSession is presumed lost once that session ends, even while the
// session's lease lives on (Orphan stops the session's keep-alives; the
// hold's keeper renews the lease itself, and would go on): Done closes.
func TestDoneClosesWhenSessionEnds(t *testing.T) {
	leakcheck.Guard(t)
	c := client(t)
	ctx := context.Background()
	s, err := concurrency.NewSession(c, concurrency.WithTTL(30))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a := etcdlock.New(c, lockKey(t), etcdlock.WithSession(s))
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	done := a.Done()
	s.Orphan()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Error("a.Done() still open 10s after its session ended")
	}
	_ = a.Unlock(ctx) // the claim's fate is not this test's
}

// duplicating returns a client whose nth gRPC call to method (from 1) is
// sent twice, the first reply thrown away: a reply lost on the way back and the
// request sent again, as a client that retries would (modeled: clientv3
// never sends a Txn or a DeleteRange again once it reached etcd; it does
// send a LeaseRevoke again, see TestUnlockRevokeReplyLost for that reply
// lost for real).
func duplicating(t *testing.T, method string, nth int) *clientv3.Client {
	t.Helper()
	var calls atomic.Int64
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 2 * time.Second,
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(
			func(ctx context.Context, m string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
				if m == method && calls.Add(1) == int64(nth) {
					if err := invoker(ctx, m, req, reply, cc, opts...); err != nil {
						return err
					}
				}
				return invoker(ctx, m, req, reply, cc, opts...)
			})},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestClaimSentTwice: the claim's transaction, its reply lost and sent
// again, finds its claim in place: one claim, the same revision, the lock
// held once.
func TestClaimSentTwice(t *testing.T) {
	leakcheck.Guard(t)
	ctx := context.Background()
	key := lockKey(t)
	m := etcdlock.New(duplicating(t, methodTxn, 1), key)
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	plain := client(t)
	got := claims(t, plain, key)
	if len(got) != 1 || got[0] != m.Claim() {
		t.Fatalf("claims after a claim sent twice = %q; want one, %q", got, m.Claim())
	}
	resp, err := plain.Get(ctx, m.Claim())
	if err != nil {
		t.Fatal(err)
	}
	if rev := uint64(resp.Kvs[0].CreateRevision); rev != m.Fence() {
		t.Errorf("claim's create revision %d; Fence() = %d", rev, m.Fence())
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestReleaseSentTwice: Unlock's release, its reply lost and sent again,
// removes only its own claim, while the next holder's claim, made in
// between, is untouched. With a lease of its own, Unlock decides by its
// delete, not by the Revoke sent twice, and says nil (issue 34); the
// delete sent twice (modeled) finds nothing the second time and Unlock
// says ErrNotHeld (it cannot tell).
func TestReleaseSentTwice(t *testing.T) {
	leakcheck.Guard(t)
	ctx := context.Background()
	key := lockKey(t)
	for _, tc := range []struct {
		name, method string
		nth          int // the call sent twice
		session      bool
		want         error
	}{
		{"own lease, Revoke twice", methodRevoke, 1, false, nil},
		{"shared session, delete Txn twice", methodTxn, 2, true, etcdlock.ErrNotHeld}, // the first Txn is the claim
	} {
		t.Run(tc.name, func(t *testing.T) {
			dup := duplicating(t, tc.method, tc.nth)
			var opts []etcdlock.Option
			if tc.session {
				s, err := concurrency.NewSession(dup, concurrency.WithTTL(5))
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				opts = append(opts, etcdlock.WithSession(s))
			}
			a := etcdlock.New(dup, key+tc.name, opts...)
			b := etcdlock.New(client(t), key+tc.name)
			if err := a.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			got := make(chan error, 1)
			go func() { got <- b.Lock(ctx) }()
			locktest.Eventually(t, 5*time.Second, "b is in line", func() bool { return len(claims(t, client(t), key+tc.name)) == 2 })
			if err := a.Unlock(ctx); !errors.Is(err, tc.want) || (err == nil) != (tc.want == nil) {
				t.Fatalf("a.Unlock, release sent twice = %v; want %v", err, tc.want)
			}
			if err := <-got; err != nil {
				t.Fatal(err)
			}
			if c := claims(t, client(t), key+tc.name); len(c) != 1 || c[0] != b.Claim() {
				t.Errorf("claims = %q; want b's %q untouched", c, b.Claim())
			}
			if err := b.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestPartitionedHolderLosesLease: a holder cut off from etcd (blackhole)
// stops renewing; its Done closes within about a TTL, etcd deletes its
// claim after the TTL, and the next client gets the lock with a larger
// fencing token. After the heal the old holder's Unlock says ErrNotHeld.
func TestPartitionedHolderLosesLease(t *testing.T) {
	t.Parallel() // no leakcheck.Guard: other tests run meanwhile; TestMain checks for leaks
	ctx := context.Background()
	e := rig.StartEtcd(t, 1)
	proxy := faultproxy.Start(t, e.Endpoints()[0])
	cut := client(t, proxy.Addr())
	direct := client(t, e.Endpoints()...)
	key := lockKey(t)

	const ttl = 2 * time.Second
	a := etcdlock.New(cut, key, etcdlock.WithTTL(ttl))
	b := etcdlock.New(direct, key, etcdlock.WithTTL(ttl))
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	fa := a.Fence()
	proxy.Blackhole()
	start := time.Now()
	if err := b.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("b got the lock %v after the partition began", time.Since(start).Round(time.Millisecond))
	if b.Fence() <= fa {
		t.Errorf("b.Fence() = %d after a's %d; want larger", b.Fence(), fa)
	}
	select {
	case <-a.Done():
		t.Logf("a's Done closed %v after the partition began", time.Since(start).Round(time.Millisecond))
	case <-time.After(5 * ttl):
		t.Fatalf("a's Done still open %v after the partition began", 5*ttl)
	}
	proxy.Heal()
	if err := a.Unlock(ctx); !errors.Is(err, etcdlock.ErrNotHeld) {
		t.Errorf("a.Unlock after its lease expired = %v; want ErrNotHeld", err)
	}
	if err := b.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestLeaderFailoverKeepsLock: the lock survives the loss of etcd's
// leader: the holder is still the holder, and nobody else gets it.
func TestLeaderFailoverKeepsLock(t *testing.T) {
	t.Parallel() // no leakcheck.Guard: other tests run meanwhile; TestMain checks for leaks
	e := rig.StartEtcd(t, 3)
	c := client(t, e.Endpoints()...)
	key := lockKey(t)
	locktest.SurvivesFailover(t, etcdlock.New(c, key), etcdlock.New(c, key), 10*time.Second, func(ctx context.Context) {
		leader, err := e.Leader(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := leader.Kill(); err != nil {
			t.Fatal(err)
		}
		if err := e.WaitHealthy(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// TestFirstKeepAliveUnansweredKeepsLock: the member freezes right after
// Lock, before it answers the new lease's first keep-alive, for twice the
// time clientv3 waits for that answer (DialTimeout+1s, 3s with the tests'
// client). The lease lives 30s, so the holder must still hold the lock
// after the thaw: Done stays open, the lease is renewed, and nobody else
// gets the lock. (On a concurrency.Session, clientv3 gave up the keep-alive
// at 3s and Done closed, while etcd still kept the lease.)
func TestFirstKeepAliveUnansweredKeepsLock(t *testing.T) {
	t.Parallel() // no leakcheck.Guard: other tests run meanwhile; TestMain checks for leaks
	ctx := context.Background()
	e := rig.StartEtcd(t, 1)
	c := client(t, e.Endpoints()...)
	key := lockKey(t)
	const (
		ttl    = 30 * time.Second
		frozen = 6 * time.Second // twice clientv3's first-answer deadline
	)
	a := etcdlock.New(c, key, etcdlock.WithTTL(ttl))
	// A first hold starts the client's keep-alive stream, so the next
	// lease's first keep-alive waits for the stream's next tick (up to
	// 500ms): it leaves after the freeze.
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	m := e.Members()[0]
	if err := m.Pause(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.Done():
		_ = m.Resume()
		t.Fatal("a's Done closed while the member was frozen, long before the lease's 30s")
	case <-time.After(frozen):
	}
	if err := m.Resume(); err != nil {
		t.Fatal(err)
	}
	// The lease is renewed: its TTL, as etcd reports it, climbs back near
	// 30s (it was granted before the freeze, so it is under 30s-6s if not).
	lease := leaseOf(t, c, a.Claim())
	for {
		r, err := c.TimeToLive(ctx, lease)
		if err != nil {
			t.Fatal(err)
		}
		if r.TTL > int64((ttl-frozen/2)/time.Second) {
			break
		}
		select {
		case <-a.Done():
			t.Fatalf("a's Done closed after the thaw; lease TTL %ds", r.TTL)
		case <-time.After(50 * time.Millisecond):
		}
	}
	b := etcdlock.New(c, key)
	if ok, err := b.TryLock(ctx); ok || err != nil {
		t.Errorf("b.TryLock while a holds = %v, %v; want false, nil", ok, err)
	}
	if err := a.Unlock(ctx); err != nil {
		t.Errorf("a.Unlock = %v; want nil", err)
	}
}

// leaseOf returns the lease the claim key lives on.
func leaseOf(t *testing.T, c *clientv3.Client, claim string) clientv3.LeaseID {
	t.Helper()
	resp, err := c.Get(context.Background(), claim)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		t.Fatalf("claim %q is gone", claim)
	}
	return clientv3.LeaseID(resp.Kvs[0].Lease)
}
