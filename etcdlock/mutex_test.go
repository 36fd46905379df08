package etcdlock_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"

	"github.com/locklab/locklab/etcdlock"
	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/internal/leakcheck"
	"github.com/locklab/locklab/internal/observetest"
	"github.com/locklab/locklab/internal/rig"
)

func TestInvalidArguments(t *testing.T) {
	c := client(t)
	ctx := context.Background()
	cases := []struct {
		name string
		m    *etcdlock.Mutex
	}{
		{"nil client", etcdlock.New(nil, "k")},
		{"empty key", etcdlock.New(c, "")},
		{"ttl under 1s", etcdlock.New(c, "k", etcdlock.WithTTL(500*time.Millisecond))},
		{"zero ttl", etcdlock.New(c, "k", etcdlock.WithTTL(0))},
		{"zero value", &etcdlock.Mutex{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.m.Lock(ctx); !errors.Is(err, etcdlock.ErrInvalid) {
				t.Errorf("Lock = %v; want ErrInvalid", err)
			}
			if ok, err := tc.m.TryLock(ctx); ok || !errors.Is(err, etcdlock.ErrInvalid) {
				t.Errorf("TryLock = %v, %v; want false, ErrInvalid", ok, err)
			}
			if err := tc.m.Unlock(ctx); !errors.Is(err, etcdlock.ErrInvalid) {
				t.Errorf("Unlock = %v; want ErrInvalid", err)
			}
		})
	}
}

func TestLockUnlockAndFence(t *testing.T) {
	leakcheck.Guard(t)
	c := client(t)
	ctx := context.Background()
	key := lockKey(t)
	a, b := etcdlock.New(c, key), etcdlock.New(c, key)

	if err := a.Lock(ctx); err != nil {
		t.Fatalf("a.Lock = %v", err)
	}
	fa := a.Fence()
	if fa == 0 {
		t.Fatal("a.Fence() = 0 while held")
	}
	if ok, err := b.TryLock(ctx); ok || err != nil {
		t.Fatalf("b.TryLock while a holds = %v, %v; want false, nil", ok, err)
	}
	if got := claims(t, c, key); len(got) != 1 || got[0] != a.Claim() {
		t.Fatalf("claims after b's refused TryLock = %q; want only a's %q", got, a.Claim())
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatalf("a.Unlock = %v", err)
	}
	if a.Fence() != 0 || a.Claim() != "" {
		t.Errorf("after Unlock: Fence() = %d, Claim() = %q; want 0, \"\"", a.Fence(), a.Claim())
	}
	if err := a.Unlock(ctx); !errors.Is(err, etcdlock.ErrNotHeld) {
		t.Errorf("second a.Unlock = %v; want ErrNotHeld", err)
	}
	if ok, err := b.TryLock(ctx); !ok || err != nil {
		t.Fatalf("b.TryLock after a released = %v, %v; want true, nil", ok, err)
	}
	if fb := b.Fence(); fb <= fa {
		t.Errorf("b.Fence() = %d after a's %d; want larger", fb, fa)
	}
	if err := b.Unlock(ctx); err != nil {
		t.Fatalf("b.Unlock = %v", err)
	}
	if got := claims(t, c, key); len(got) != 0 {
		t.Errorf("claims after both released = %q; want none", got)
	}
}

func TestNeverLockedUnlock(t *testing.T) {
	m := etcdlock.New(client(t), lockKey(t))
	if err := m.Unlock(context.Background()); !errors.Is(err, etcdlock.ErrNotHeld) {
		t.Errorf("Unlock of a never locked Mutex = %v; want ErrNotHeld", err)
	}
	select {
	case <-m.Done():
	default:
		t.Error("Done() of a Mutex that holds nothing is not closed")
	}
}

// TestWaitersServedInOrder: waiters queue by claim revision, and each
// release wakes the next one. Claims are ordered by waiting for each
// waiter's claim to appear before starting the next.
func TestWaitersServedInOrder(t *testing.T) {
	leakcheck.Guard(t)
	c := client(t)
	ctx := context.Background()
	key := lockKey(t)
	holder := etcdlock.New(c, key)
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		order []int
	)
	var g errgroup.Group
	waiters := make([]*etcdlock.Mutex, 4)
	for i := range waiters {
		waiters[i] = etcdlock.New(c, key)
		g.Go(func() error {
			if err := waiters[i].Lock(ctx); err != nil {
				return err
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			return waiters[i].Unlock(ctx)
		})
		eventually(t, 10*time.Second, "waiter's claim appears", func() bool { return len(claims(t, c, key)) == i+2 })
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	if want := []int{0, 1, 2, 3}; !slices.Equal(order, want) {
		t.Errorf("waiters got the lock in order %v; want %v", order, want)
	}
}

// TestGiveUpWhileWaitingWithdrawsClaim: a Lock whose ctx ends while it is
// in line returns ErrNotObtained joined with the ctx error and leaves no
// claim behind, so the next waiter is not held up by it.
func TestGiveUpWhileWaitingWithdrawsClaim(t *testing.T) {
	leakcheck.Guard(t)
	c := client(t)
	key := lockKey(t)
	holder := etcdlock.New(c, key)
	if err := holder.Lock(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer holder.Unlock(context.Background())

	ctx, cancel := context.WithCancel(context.Background())
	w := etcdlock.New(c, key, etcdlock.WithHook(func(_ context.Context, point string) {
		if point == etcdlock.HookClaimed {
			cancel() // the caller gives up right after its claim is written
		}
	}))
	err := w.Lock(ctx)
	if !errors.Is(err, etcdlock.ErrNotObtained) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock cancelled in line = %v; want ErrNotObtained and context.Canceled", err)
	}
	if got := claims(t, c, key); len(got) != 1 || got[0] != holder.Claim() {
		t.Errorf("claims after the waiter gave up = %q; want only the holder's %q", got, holder.Claim())
	}
	// A ctx that has already ended sends nothing.
	if err := w.Lock(ctx); !errors.Is(err, etcdlock.ErrNotObtained) || !errors.Is(err, context.Canceled) {
		t.Errorf("Lock with an ended ctx = %v; want ErrNotObtained and context.Canceled", err)
	}
	dctx, dcancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer dcancel()
	if err := w.Lock(dctx); !errors.Is(err, etcdlock.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Lock past its deadline = %v; want ErrNotObtained and context.DeadlineExceeded", err)
	}
	if got := claims(t, c, key); len(got) != 1 {
		t.Errorf("claims after the timed-out Lock = %q; want only the holder's", got)
	}
}

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

// duplicating returns a client whose gRPC calls to method are sent twice,
// the first reply thrown away: a reply lost on the way back and the
// request sent again, as a client that retries would.
func duplicating(t *testing.T, method string) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 2 * time.Second,
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(
			func(ctx context.Context, m string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
				if m == method {
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
	m := etcdlock.New(duplicating(t, "/etcdserverpb.KV/Txn"), key)
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
// removes only its own claim: the second one finds nothing and Unlock
// reports ErrNotHeld (it cannot tell), while the next holder's claim,
// made in between, is untouched.
func TestReleaseSentTwice(t *testing.T) {
	leakcheck.Guard(t)
	ctx := context.Background()
	key := lockKey(t)
	for _, tc := range []struct {
		name, method string
		session      bool
	}{
		{"own lease, Revoke twice", "/etcdserverpb.Lease/LeaseRevoke", false},
		{"shared session, Delete twice", "/etcdserverpb.KV/DeleteRange", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dup := duplicating(t, tc.method)
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
			eventually(t, 5*time.Second, "b is in line", func() bool { return len(claims(t, client(t), key+tc.name)) == 2 })
			err := a.Unlock(ctx)
			if err != nil && !errors.Is(err, etcdlock.ErrNotHeld) {
				t.Fatalf("a.Unlock sent twice = %v", err)
			}
			t.Logf("a.Unlock, release sent twice: %v", err)
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
	ctx := context.Background()
	e := rig.StartEtcd(t, 3)
	c := client(t, e.Endpoints()...)
	key := lockKey(t)
	a, b := etcdlock.New(c, key), etcdlock.New(c, key)
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
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
	tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if ok, err := b.TryLock(tctx); ok || err != nil {
		t.Errorf("b.TryLock after the leader died = %v, %v; want false, nil", ok, err)
	}
	if err := a.Unlock(tctx); err != nil {
		t.Errorf("a.Unlock after the leader died = %v; want nil", err)
	}
	if ok, err := b.TryLock(tctx); !ok || err != nil {
		t.Errorf("b.TryLock after a released = %v, %v; want true, nil", ok, err)
	}
	_ = b.Unlock(ctx)
}

func TestObserver(t *testing.T) {
	leakcheck.Guard(t)
	rec := observetest.New()
	ctx := context.Background()
	key := lockKey(t)
	m := etcdlock.New(client(t), key, etcdlock.WithObserver(rec.Observe))
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := etcdlock.New(client(t), key).TryLock(ctx); ok || err != nil {
		t.Fatalf("TryLock while held = %v, %v", ok, err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	rec.Expect(t, "Lock, Unlock", "etcdlock", key, "acquired released")
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_ = m.Lock(cctx)
	rec.Expect(t, "Lock with an ended ctx", "etcdlock", key, "gave-up")
	if err := m.Unlock(ctx); !errors.Is(err, etcdlock.ErrNotHeld) {
		t.Fatalf("Unlock not held = %v", err)
	}
	rec.Expect(t, "Unlock not held", "etcdlock", key, "")
}

// TestContention: many Mutexes, one key; the critical section is never
// shared, and every claim is gone at the end.
func TestContention(t *testing.T) {
	leakcheck.Guard(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	key := lockKey(t)
	cs := []*clientv3.Client{client(t), client(t)}
	var inside, maxInside, total int
	var mu sync.Mutex
	var g errgroup.Group
	for i := range 6 {
		m := etcdlock.New(cs[i%2], key)
		g.Go(func() error {
			for range 5 {
				if err := m.Lock(ctx); err != nil {
					return err
				}
				mu.Lock()
				inside++
				maxInside = max(maxInside, inside)
				total++
				mu.Unlock()
				time.Sleep(time.Millisecond)
				mu.Lock()
				inside--
				mu.Unlock()
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
	if maxInside != 1 || total != 30 {
		t.Errorf("max holders at once %d, acquisitions %d; want 1, 30", maxInside, total)
	}
	if got := claims(t, cs[0], key); len(got) != 0 {
		t.Errorf("claims left = %q", got)
	}
}
