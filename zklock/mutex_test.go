package zklock_test

import (
	"context"
	"errors"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"golang.org/x/sync/errgroup"

	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/internal/leakcheck"
	"github.com/locklab/locklab/internal/observetest"
	"github.com/locklab/locklab/internal/rig"
	"github.com/locklab/locklab/zklock"
)

const timeout = 10 * time.Second

func TestInvalidArguments(t *testing.T) {
	s := session(t, timeout)
	ctx := context.Background()
	cases := []struct {
		name string
		m    *zklock.Mutex
	}{
		{"nil session", zklock.New(nil, "/locks/a")},
		{"empty path", zklock.New(s, "")},
		{"relative path", zklock.New(s, "locks/a")},
		{"root", zklock.New(s, "/")},
		{"trailing slash", zklock.New(s, "/locks/a/")},
		{"double slash", zklock.New(s, "/locks//a")},
		{"dot component", zklock.New(s, "/locks/../a")},
		{"reserved", zklock.New(s, "/zookeeper/a")},
		{"zero value", &zklock.Mutex{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.m.Lock(ctx); !errors.Is(err, zklock.ErrInvalid) {
				t.Errorf("Lock = %v; want ErrInvalid", err)
			}
			if ok, err := tc.m.TryLock(ctx); ok || !errors.Is(err, zklock.ErrInvalid) {
				t.Errorf("TryLock = %v, %v; want false, ErrInvalid", ok, err)
			}
			if err := tc.m.Unlock(ctx); !errors.Is(err, zklock.ErrInvalid) {
				t.Errorf("Unlock = %v; want ErrInvalid", err)
			}
		})
	}
	if _, err := zklock.Connect(nil, timeout); !errors.Is(err, zklock.ErrInvalid) {
		t.Errorf("Connect(no servers) = %v; want ErrInvalid", err)
	}
	if _, err := zklock.Connect(servers, 0); !errors.Is(err, zklock.ErrInvalid) {
		t.Errorf("Connect(timeout 0) = %v; want ErrInvalid", err)
	}
}

func TestLockUnlockAndFence(t *testing.T) {
	leakcheck.Guard(t)
	s := session(t, timeout)
	ctx := context.Background()
	p := lockPath(t)
	a, b := zklock.New(s, p), zklock.New(s, p)

	if err := a.Lock(ctx); err != nil {
		t.Fatalf("a.Lock = %v", err)
	}
	fa := a.Fence()
	if fa == 0 || a.Seq() < 0 {
		t.Fatalf("a.Fence(), Seq() = %d, %d while held", fa, a.Seq())
	}
	if ok, err := b.TryLock(ctx); ok || err != nil {
		t.Fatalf("b.TryLock while a holds = %v, %v; want false, nil", ok, err)
	}
	if got := children(t, s, p); len(got) != 1 || p+"/"+got[0] != a.Node() {
		t.Fatalf("children after b's refused TryLock = %q; want only a's %q", got, a.Node())
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatalf("a.Unlock = %v", err)
	}
	if a.Fence() != 0 || a.Node() != "" {
		t.Errorf("after Unlock: Fence() = %d, Node() = %q; want 0, \"\"", a.Fence(), a.Node())
	}
	if err := a.Unlock(ctx); !errors.Is(err, zklock.ErrNotHeld) {
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
	if got := children(t, s, p); len(got) != 0 {
		t.Errorf("children after both released = %q; want none", got)
	}
}

func TestNeverLockedUnlock(t *testing.T) {
	m := zklock.New(session(t, timeout), lockPath(t))
	if err := m.Unlock(context.Background()); !errors.Is(err, zklock.ErrNotHeld) {
		t.Errorf("Unlock of a never locked Mutex = %v; want ErrNotHeld", err)
	}
	select {
	case <-m.Done():
	default:
		t.Error("Done() of a Mutex that holds nothing is not closed")
	}
}

func TestWaitersServedInOrder(t *testing.T) {
	leakcheck.Guard(t)
	s := session(t, timeout)
	ctx := context.Background()
	p := lockPath(t)
	holder := zklock.New(s, p)
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		order []int
	)
	var g errgroup.Group
	for i := range 4 {
		w := zklock.New(s, p)
		g.Go(func() error {
			if err := w.Lock(ctx); err != nil {
				return err
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			return w.Unlock(ctx)
		})
		eventually(t, 10*time.Second, "waiter's child appears", func() bool { return len(children(t, s, p)) == i+2 })
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

func TestGiveUpWhileWaitingDeletesChild(t *testing.T) {
	leakcheck.Guard(t)
	s := session(t, timeout)
	p := lockPath(t)
	holder := zklock.New(s, p)
	if err := holder.Lock(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer holder.Unlock(context.Background())

	ctx, cancel := context.WithCancel(context.Background())
	w := zklock.New(s, p, zklock.WithHook(func(_ context.Context, point string) {
		if point == zklock.HookClaimed {
			cancel()
		}
	}))
	err := w.Lock(ctx)
	if !errors.Is(err, zklock.ErrNotObtained) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock cancelled in line = %v; want ErrNotObtained and context.Canceled", err)
	}
	if got := children(t, s, p); len(got) != 1 || p+"/"+got[0] != holder.Node() {
		t.Errorf("children after the waiter gave up = %q; want only the holder's", got)
	}
	if err := w.Lock(ctx); !errors.Is(err, zklock.ErrNotObtained) || !errors.Is(err, context.Canceled) {
		t.Errorf("Lock with an ended ctx = %v; want ErrNotObtained and context.Canceled", err)
	}
	dctx, dcancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer dcancel()
	if err := w.Lock(dctx); !errors.Is(err, zklock.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Lock past its deadline = %v; want ErrNotObtained and context.DeadlineExceeded", err)
	}
	if got := children(t, s, p); len(got) != 1 {
		t.Errorf("children after the timed-out Lock = %q; want only the holder's", got)
	}
}

// TestSessionCloseReleases: the ephemeral child dies with its session, so
// closing a holder's session releases the lock with no Unlock: the
// chapter's "the ephemeral node replaces the watchdog".
func TestSessionCloseReleases(t *testing.T) {
	leakcheck.Guard(t)
	ctx := context.Background()
	p := lockPath(t)
	sa, err := zklock.Connect(servers, timeout)
	if err != nil {
		t.Fatal(err)
	}
	a := zklock.New(sa, p)
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	b := zklock.New(session(t, timeout), p)
	got := make(chan error, 1)
	go func() { got <- b.Lock(ctx) }()
	sa.Close()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(timeout / 2):
		t.Fatalf("b did not get the lock %v after a's session closed", timeout/2)
	}
	if err := a.Lock(ctx); !errors.Is(err, zklock.ErrSessionLost) {
		t.Errorf("Lock on a closed session = %v; want ErrSessionLost", err)
	}
	_ = b.Unlock(ctx)
}

// TestPartitionedHolderLosesSession: a holder cut off from ZooKeeper sees
// Done close once its client gives up on the connection (2/3 of the
// session timeout); the server expires the session after the timeout and
// deletes its child; the next client gets the lock with a larger fencing
// token. After the heal the old holder's Unlock says ErrNotHeld.
func TestPartitionedHolderLosesSession(t *testing.T) {
	t.Parallel() // no leakcheck.Guard: other tests run meanwhile; TestMain checks for leaks
	ctx := context.Background()
	z := rig.StartZooKeeper(t, 1, rig.WithZooKeeperForTests())
	proxy := faultproxy.Start(t, z.Addrs()[0])
	const short = 2 * time.Second
	cut := session(t, short, proxy.Addr())
	direct := session(t, timeout, z.Addrs()...)
	p := lockPath(t)

	a, b := zklock.New(cut, p), zklock.New(direct, p)
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	fa := a.Fence()
	proxy.Blackhole()
	start := time.Now()
	select {
	case <-a.Done():
		t.Logf("a's Done closed %v after the partition began", time.Since(start).Round(time.Millisecond))
	case <-time.After(5 * short):
		t.Fatalf("a's Done still open %v after the partition began", 5*short)
	}
	if err := b.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("b got the lock %v after the partition began", time.Since(start).Round(time.Millisecond))
	if b.Fence() <= fa {
		t.Errorf("b.Fence() = %d after a's %d; want larger", b.Fence(), fa)
	}
	proxy.Heal()
	// Until a's client has reconnected and learnt that its session
	// expired, Unlock fails with a transport error.
	eventually(t, 5*short, "a.Unlock says not held", func() bool {
		return errors.Is(a.Unlock(ctx), zklock.ErrNotHeld)
	})
	if err := b.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestCreateReplyLost: the network holds a's create (the request waits in
// the network; a's client gives up on the connection and the create fails
// with a lost connection), then heals: the create reaches the server
// late, on the old connection, and a's client reconnects to the same
// session. Whatever the order, a's child is adopted (a holds the lock
// with it) or deleted: never left at the head of the line.
func TestCreateReplyLost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	z := rig.StartZooKeeper(t, 1, rig.WithZooKeeperForTests())
	proxy := faultproxy.Start(t, z.Addrs()[0])
	const short = 3 * time.Second
	s := session(t, short, proxy.Addr())
	direct := session(t, timeout, z.Addrs()...)
	p := lockPath(t)
	a := zklock.New(s, p)
	// The lock's node exists already, so a's first request is the create.
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}

	proxy.Blackhole()
	got := make(chan error, 1)
	go func() { got <- a.Lock(ctx) }()
	eventually(t, 5*short, "a's client gives up on the connection", func() bool {
		return s.Conn().State() != zk.StateHasSession
	})
	proxy.Heal()
	err := <-got
	t.Logf("Lock across the lost create: %v", err)
	if err == nil {
		if c := children(t, direct, p); len(c) != 1 || p+"/"+c[0] != a.Node() {
			t.Errorf("children = %q; want only a's %q", c, a.Node())
		}
		if err := a.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 2*short, "no child left", func() bool { return len(children(t, direct, p)) == 0 })
}

// TestLeaderFailoverKeepsLock: on a 3-server ensemble, the lock survives
// the death of the leader.
func TestLeaderFailoverKeepsLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	z := rig.StartZooKeeper(t, 3, rig.WithZooKeeperForTests())
	s := session(t, timeout, z.Addrs()...)
	other := session(t, timeout, z.Addrs()...)
	p := lockPath(t)
	a, b := zklock.New(s, p), zklock.New(other, p)
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	leader, err := z.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := leader.Kill(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "a new leader", func() bool {
		l, err := z.Leader(ctx)
		return err == nil && l != leader
	})
	tctx, cancel := context.WithTimeout(ctx, 20*time.Second)
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
	s := session(t, timeout)
	ctx := context.Background()
	p := lockPath(t)
	m := zklock.New(s, p, zklock.WithObserver(rec.Observe))
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := zklock.New(s, p).TryLock(ctx); ok || err != nil {
		t.Fatalf("TryLock while held = %v, %v", ok, err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	rec.Expect(t, "Lock, Unlock", "zklock", p, "acquired released")
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_ = m.Lock(cctx)
	rec.Expect(t, "Lock with an ended ctx", "zklock", p, "gave-up")
}

func TestContention(t *testing.T) {
	leakcheck.Guard(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p := lockPath(t)
	ss := []*zklock.Session{session(t, timeout), session(t, timeout)}
	var inside, maxInside, total int
	var mu sync.Mutex
	var g errgroup.Group
	for i := range 6 {
		m := zklock.New(ss[i%2], p)
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
	if got := children(t, ss[0], p); len(got) != 0 {
		t.Errorf("children left = %q", got)
	}
}

// TestChildNames: children are named lock-<token>-<sequence> under the
// lock's path, so a lost create can be found by its token.
func TestChildNames(t *testing.T) {
	s := session(t, timeout)
	ctx := context.Background()
	p := lockPath(t)
	m := zklock.New(s, p)
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Unlock(ctx)
	if dir, name := path.Split(m.Node()); dir != p+"/" || !strings.HasPrefix(name, "lock-") || len(name) != len("lock-")+22+1+10 {
		t.Errorf("Node() = %q; want %s/lock-<22-char token>-<10 digits>", m.Node(), p)
	}
}

// TestUnlockReplyLost: Unlock's delete sent into a partition fails (no
// answer in time); the Mutex keeps the hold, so Unlock can be called
// again once the network heals, and then says either nil (the first
// delete never landed) or ErrNotHeld (it had, or the session expired):
// either way the lock is free, and no other holder's child was touched.
func TestUnlockReplyLost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	z := rig.StartZooKeeper(t, 1, rig.WithZooKeeperForTests())
	proxy := faultproxy.Start(t, z.Addrs()[0])
	s := session(t, 3*time.Second, proxy.Addr())
	direct := session(t, timeout, z.Addrs()...)
	p := lockPath(t)
	a := zklock.New(s, p)
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	proxy.Blackhole()
	if err := a.Unlock(ctx); err == nil || errors.Is(err, zklock.ErrNotHeld) {
		t.Fatalf("Unlock into a partition = %v; want a transport error", err)
	}
	if a.Node() == "" {
		t.Fatal("the Mutex forgot its hold after an Unlock whose outcome is unknown")
	}
	proxy.Heal()
	eventually(t, 10*time.Second, "Unlock answered", func() bool {
		err := a.Unlock(ctx)
		return err == nil || errors.Is(err, zklock.ErrNotHeld)
	})
	b := zklock.New(direct, p)
	if err := b.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
