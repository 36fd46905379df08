package zklock_test

import (
	"context"
	"errors"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/internal/leakcheck"
	"github.com/locklab/locklab/internal/locktest"
	"github.com/locklab/locklab/internal/rig"
	"github.com/locklab/locklab/zklock"
)

const timeout = 10 * time.Second

func TestInvalidArguments(t *testing.T) {
	s := session(t, timeout)
	locktest.RefusesInvalid(t, zklock.ErrInvalid, map[string]locktest.Locker{
		"nil session":    zklock.New(nil, "/locks/a"),
		"empty path":     zklock.New(s, ""),
		"relative path":  zklock.New(s, "locks/a"),
		"root":           zklock.New(s, "/"),
		"trailing slash": zklock.New(s, "/locks/a/"),
		"double slash":   zklock.New(s, "/locks//a"),
		"dot component":  zklock.New(s, "/locks/../a"),
		"reserved":       zklock.New(s, "/zookeeper/a"),
		"over-long path": zklock.New(s, "/locks/"+strings.Repeat("a", 1<<20)),
		"zero value":     &zklock.Mutex{},
	}, nil)
	if _, err := zklock.Connect(nil, timeout); !errors.Is(err, zklock.ErrInvalid) {
		t.Errorf("Connect(no servers) = %v; want ErrInvalid", err)
	}
	if _, err := zklock.Connect(servers, 0); !errors.Is(err, zklock.ErrInvalid) {
		t.Errorf("Connect(timeout 0) = %v; want ErrInvalid", err)
	}
}

// TestBasics runs the scenarios every lock on a system keeps, from
// internal/locktest: one holder and growing fences, waiters served in the
// order of their children, a Lock that gives up deleting its child, the
// observer, contention.
func TestBasics(t *testing.T) { locktest.Run(t, kind, lockPath) }

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

// cutOff starts a ZooKeeper server of the test's own and a fault proxy in
// front of it, and returns the proxy, a session through it with the
// session timeout short, a session straight to the server, and a lock
// path.
func cutOff(t *testing.T, short time.Duration) (proxy *faultproxy.Proxy, cut, direct *zklock.Session, p string) {
	t.Helper()
	z := rig.StartZooKeeper(t, 1, rig.WithZooKeeperForTests())
	proxy = faultproxy.Start(t, z.Addrs()[0])
	return proxy, session(t, short, proxy.Addr()), session(t, timeout, z.Addrs()...), lockPath(t)
}

// TestPartitionedHolderLosesSession: a holder cut off from ZooKeeper sees
// Done close once its client gives up on the connection (2/3 of the
// session timeout); the server expires the session after the timeout and
// deletes its child; the next client gets the lock with a larger fencing
// token. After the heal the old holder's Unlock says ErrNotHeld.
func TestPartitionedHolderLosesSession(t *testing.T) {
	t.Parallel() // no leakcheck.Guard: other tests run meanwhile; TestMain checks for leaks
	ctx := context.Background()
	const short = 2 * time.Second
	proxy, cut, direct, p := cutOff(t, short)

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
	locktest.Eventually(t, 5*short, "a.Unlock says not held", func() bool {
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
	const short = 3 * time.Second
	proxy, s, direct, p := cutOff(t, short)
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
	locktest.Eventually(t, 5*short, "a's client gives up on the connection", func() bool {
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
	locktest.Eventually(t, 2*short, "no child left", func() bool { return len(children(t, direct, p)) == 0 })
}

// TestLeaderFailoverKeepsLock: on a 3-server ensemble, the lock survives
// the death of the leader.
func TestLeaderFailoverKeepsLock(t *testing.T) {
	t.Parallel()
	z := rig.StartZooKeeper(t, 3, rig.WithZooKeeperForTests())
	p := lockPath(t)
	a := zklock.New(session(t, timeout, z.Addrs()...), p)
	b := zklock.New(session(t, timeout, z.Addrs()...), p)
	locktest.SurvivesFailover(t, a, b, 20*time.Second, func(ctx context.Context) {
		leader, err := z.Leader(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := leader.Kill(); err != nil {
			t.Fatal(err)
		}
		locktest.Eventually(t, 30*time.Second, "a new leader", func() bool {
			l, err := z.Leader(ctx)
			return err == nil && l != leader
		})
	})
}

// TestChildNames: children are named lock-<token>-<sequence> under the
// lock's path, so a lost create can be found by its token; Seq reports the
// sequence while held.
func TestChildNames(t *testing.T) {
	s := session(t, timeout)
	ctx := context.Background()
	p := lockPath(t)
	m := zklock.New(s, p)
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Unlock(ctx)
	if m.Seq() < 0 {
		t.Errorf("Seq() = %d while held; want the child's sequence", m.Seq())
	}
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
	locktest.Eventually(t, 10*time.Second, "Unlock answered", func() bool {
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
