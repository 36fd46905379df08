package etcdlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/locklab/locklab/etcdlock"
	"github.com/locklab/locklab/internal/leakcheck"
	"github.com/locklab/locklab/internal/locktest"
	"github.com/locklab/locklab/internal/rig"
	"github.com/locklab/locklab/observe"
)

// The regression tests of issue 34's findings on etcdlock, each in the
// user's world: clientv3 on its default options, real etcd, the bytes of
// one connection held, delivered late or lost (wire_test.go).

const (
	methodTxn    = "/etcdserverpb.KV/Txn"
	methodRange  = "/etcdserverpb.KV/Range"
	methodRevoke = "/etcdserverpb.Lease/LeaseRevoke"
)

// TestLateClaimAfterGiveUp (issue 34, WithSession's permanent stall): the
// claim's transaction is held in the network; the client gives the
// connection up (as gRPC does when its keep-alive finds it dead, about 11s
// in the user's world; here at once) and Lock fails and withdraws its claim
// on a new connection, where there is nothing yet to withdraw. Then the
// network delivers the held transaction, on its old connection, and etcd
// runs it. The claim must not land, or must not stay: no claim in line,
// and another client gets the lock at once. With a lease per hold, the
// withdraw revoked the lease, so the late claim fails; on a shared session
// the lease lives on.
func TestLateClaimAfterGiveUp(t *testing.T) {
	for _, tc := range []struct {
		name    string
		session bool
	}{{"own lease", false}, {"shared session", true}} {
		t.Run(tc.name, func(t *testing.T) {
			leakcheck.Guard(t)
			ctx := context.Background()
			key := lockKey(t)
			w := newWire(t, endpoints[0])
			c := w.client(t)
			var opts []etcdlock.Option
			var s *concurrency.Session
			if tc.session {
				var err error
				if s, err = concurrency.NewSession(c, concurrency.WithTTL(30)); err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				opts = append(opts, etcdlock.WithSession(s))
			} else if _, err := c.Get(ctx, key); err != nil { // the first connection is up
				t.Fatal(err)
			}
			a := etcdlock.New(c, key, opts...)
			conn := w.current()
			w.beforeCall(methodTxn, func(any) { conn.hold() }) // the claim is the first Txn
			got := make(chan error, 1)
			go func() { got <- a.Lock(ctx) }()
			conn.awaitHeld()
			conn.giveUp()
			err := <-got
			if err == nil {
				t.Fatal("a.Lock = nil with its claim held in the network; want an error")
			}
			t.Logf("a.Lock, claim held and the connection given up: %v", err)

			conn.deliver() // the held claim reaches etcd, which runs it
			plain := client(t)
			if line := claims(t, plain, key); len(line) != 0 {
				t.Errorf("claims after a's late claim reached etcd = %q; want none (a gave up: nobody would ever delete it)", line)
			}
			b := etcdlock.New(plain, key)
			bctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			if err := b.Lock(bctx); err != nil {
				t.Fatalf("b.Lock after a gave up = %v; want nil within 5s", err)
			}
			if err := b.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			// a's process locks again, as a worker that retries would.
			if err := a.Lock(bctx); err != nil {
				t.Fatalf("a.Lock again = %v", err)
			}
			if err := a.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			if s == nil {
				return
			}
			// The withdraw's tombstone lives on the session's lease, out
			// of the line, and ends with the session.
			if n := tombstones(t, plain, key); n != 1 {
				t.Errorf("tombstones under %q/~ = %d; want 1", key, n)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if n := tombstones(t, plain, key); n != 0 {
				t.Errorf("tombstones after the session closed = %d; want 0", n)
			}
		})
	}
}

// tombstones counts the tombstones of withdrawn claims of the lock named
// key: the keys from key + "/~" on.
func tombstones(t *testing.T, c *clientv3.Client, key string) int64 {
	t.Helper()
	resp, err := c.Get(context.Background(), key+"/~", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Count
}

var _ = errors.Is

// TestUnlockRevokeReplyLost (issue 34): a holder with a lease of its own
// unlocks; etcd revokes the lease, and the Revoke's reply is lost (the
// connection closes as it comes back). clientv3 sends the Revoke again,
// on a new connection (its retry policy treats LeaseRevoke as
// repeatable), and the second finds no lease. The lock was held until
// that moment, so Unlock must say nil, not ErrNotHeld, and the observer
// must hear of a release, not a loss.
func TestUnlockRevokeReplyLost(t *testing.T) {
	leakcheck.Guard(t)
	ctx := context.Background()
	key := lockKey(t)
	w := newWire(t, endpoints[0])
	var lost atomic.Int64
	a := etcdlock.New(w.client(t), key, etcdlock.WithObserver(func(e observe.Event) {
		if e.Kind == observe.Lost {
			lost.Add(1)
		}
	}))
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	conn := w.current()
	w.beforeCall(methodRevoke, func(any) { conn.dropReply() })
	if err := a.Unlock(ctx); err != nil {
		t.Errorf("a.Unlock, the Revoke's reply lost and the Revoke sent again = %v; want nil (a held the lock until then)", err)
	}
	if n := lost.Load(); n != 0 {
		t.Errorf("observer heard %d losses; want 0", n)
	}
	w.await(5*time.Second, "the Revoke's reply was lost", func() bool { return !conn.dropNext })
	if line := claims(t, client(t), key); len(line) != 0 {
		t.Errorf("claims after Unlock = %q; want none", line)
	}
}

// TestWaitResumesAfterCompaction (issue 34): a waits in line, watching the
// claim ahead from the revision at which it read the line. Its connection
// is partitioned, etcd compacts past that revision meanwhile, and the
// client gives the connection up and dials again; clientv3 resumes the
// watch from the old revision, which etcd no longer has. a must keep its
// place (re-read the line, watch again) and get the lock when b unlocks,
// not fail with "required revision has been compacted".
func TestWaitResumesAfterCompaction(t *testing.T) {
	t.Parallel() // it compacts: a cluster of its own
	ctx := context.Background()
	e := rig.StartEtcd(t, 1)
	key := lockKey(t)
	w := newWire(t, e.Endpoints()[0])
	plain := client(t, e.Endpoints()...)

	b := etcdlock.New(plain, key)
	if err := b.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	read := make(chan struct{})
	a := etcdlock.New(w.client(t), key, etcdlock.WithHook(func(ctx context.Context, point string) {
		if point == etcdlock.HookClaimed {
			// The next Range is a's read of the line ahead of it.
			w.afterCall(methodRange, func() { close(read) })
		}
	}))
	got := make(chan error, 1)
	go func() { got <- a.Lock(ctx) }()
	select {
	case <-read:
	case err := <-got:
		t.Fatalf("a.Lock = %v before it waited", err)
	}
	conn := w.current()
	conn.hold()
	for i := range 3 {
		if _, err := plain.Put(ctx, key+"-other", fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	r, err := plain.Get(ctx, key+"-other")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Compact(ctx, r.Header.Revision); err != nil {
		t.Fatal(err)
	}
	reread := make(chan struct{})
	w.afterCall(methodRange, func() { close(reread) })
	conn.giveUp() // clientv3 dials again and resumes a's watch

	select {
	case err := <-got:
		t.Fatalf("a.Lock while b holds, after a reconnect past a compaction = %v; want it to keep waiting", err)
	case <-reread: // a read the line again
	}
	if err := b.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("a.Lock after b unlocked = %v; want nil", err)
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestLockDuringElection: etcd's leader is SIGKILLed and a Lock begins at
// once; its Grant waits out the election (about 7s here, more than the
// 5s lease). Lock must not return a hold whose Done has already closed
// (the keeper counts the lease from the Grant's send time, so with a slow
// grant it had nothing left to count on): it renews first, and never
// hands out a hold it cannot vouch for.
func TestLockDuringElection(t *testing.T) {
	t.Parallel() // it kills a leader: a cluster of its own
	ctx := context.Background()
	e := rig.StartEtcd(t, 3)
	c := client(t, e.Endpoints()...)
	a := etcdlock.New(c, lockKey(t), etcdlock.WithTTL(5*time.Second))
	leader, err := e.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := leader.Kill(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = a.Lock(ctx)
	t.Logf("a.Lock right after the leader's SIGKILL = %v, after %v", err, time.Since(start).Round(time.Millisecond))
	if err == nil {
		select {
		case <-a.Done():
			t.Errorf("a.Lock = nil with a's Done already closed: a hold it cannot vouch for")
		default:
		}
	}
	if err := leader.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err == nil {
		if err := a.Unlock(ctx); err != nil && !errors.Is(err, etcdlock.ErrNotHeld) {
			t.Fatal(err)
		}
	}
}

// TestUnlockAgainAfterDeleteReplyLost: a holds the lock; Unlock's delete
// reaches etcd and lands, and its reply is lost (the connection closes as
// it comes back). clientv3 does not send a Txn again, so Unlock fails with
// the outcome unknown, and the Mutex keeps the hold, as its doc says; the
// caller calls Unlock again. a held the lock until its first Unlock, and
// that Unlock released it: the second must say nil, not ErrNotHeld (a
// release sent again answers what the first one did), and the observer
// must hear of a release, not a loss.
func TestUnlockAgainAfterDeleteReplyLost(t *testing.T) {
	leakcheck.Guard(t)
	ctx := context.Background()
	for _, session := range []bool{false, true} {
		name := "own lease"
		if session {
			name = "shared session"
		}
		t.Run(name, func(t *testing.T) {
			key := lockKey(t)
			w := newWire(t, endpoints[0])
			c := w.client(t)
			var lost, released atomic.Int64
			opts := []etcdlock.Option{etcdlock.WithObserver(func(e observe.Event) {
				switch e.Kind {
				case observe.Lost:
					lost.Add(1)
				case observe.Released:
					released.Add(1)
				}
			})}
			if session {
				s, err := concurrency.NewSession(c, concurrency.WithTTL(10))
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				opts = append(opts, etcdlock.WithSession(s))
			}
			a := etcdlock.New(c, key, opts...)
			if err := a.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			conn := w.current()
			w.beforeCall(methodTxn, func(any) { conn.dropReply() })
			err := a.Unlock(ctx)
			if err == nil {
				t.Fatal("a.Unlock with the delete's reply lost = nil; want a transport error (the fault did not take)")
			}
			t.Logf("a.Unlock, the delete's reply lost = %v", err)
			if line := claims(t, client(t), key); len(line) != 0 {
				t.Fatalf("claims after the lost delete = %q; want none (the delete landed)", line)
			}
			if err := a.Unlock(ctx); err != nil {
				t.Errorf("a.Unlock again, after its first Unlock's delete landed with its reply lost = %v; want nil (a held the lock until then)", err)
			}
			if n := lost.Load(); n != 0 {
				t.Errorf("observer heard %d losses; want 0", n)
			}
			if n := released.Load(); n != 1 {
				t.Errorf("observer heard %d releases; want 1", n)
			}
			if err := a.Unlock(ctx); !errors.Is(err, etcdlock.ErrNotHeld) {
				t.Errorf("a third Unlock = %v; want ErrNotHeld", err)
			}
		})
	}
}

// TestTryLockWithdrawLostOnSession: with WithSession, b holds the lock and
// a's TryLock finds it taken; its claim landed, and the delete that
// withdraws it is held in the network until the client gives the
// connection up (gRPC's keep-alive, about 11s in the user's world; here at
// once), so TryLock reports the error. The claim lives on the session's
// lease, which the session keeps alive: nobody may be left queueing
// behind it. Once b unlocks, another client must get the lock within a
// few seconds, not when a's session ends.
func TestTryLockWithdrawLostOnSession(t *testing.T) {
	leakcheck.Guard(t)
	ctx := context.Background()
	key := lockKey(t)
	w := newWire(t, endpoints[0])
	c := w.client(t)
	s, err := concurrency.NewSession(c, concurrency.WithTTL(10))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a := etcdlock.New(c, key, etcdlock.WithSession(s))
	b := etcdlock.New(client(t), key)
	if err := b.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	held := make(chan *wireConn, 1)
	w.beforeCall(methodTxn, func(any) { // the claim: it lands; then the withdraw is held
		w.beforeCall(methodTxn, func(any) {
			conn := w.current()
			conn.hold()
			held <- conn
			go conn.giveUpWhenHeld()
		})
	})
	ok, err := a.TryLock(ctx)
	if ok {
		t.Fatal("a.TryLock = true while b holds the lock")
	}
	select {
	case <-held:
	default:
		t.Fatalf("a.TryLock = %v, %v, and its withdraw was never sent (the fault did not take)", ok, err)
	}
	t.Logf("a.TryLock, its withdraw held and given up = %v, %v", ok, err)
	if err := b.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 8*time.Second)
	defer cancel()
	d := etcdlock.New(client(t), key)
	if err := d.Lock(cctx); err != nil {
		t.Fatalf("another client's Lock after b unlocked = %v; want nil within 8s (claims in line: %q; a's session lives on)", err, claims(t, client(t), key))
	}
	if err := d.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if line := claims(t, client(t), key); len(line) != 0 {
		t.Errorf("claims after every client is done = %q; want none", line)
	}
}

// TestUnlockGivenUpOnSessionStillReleases: with WithSession, a holds the
// lock and b waits; a's Unlock sends its delete, which is held in the
// network until the client gives the connection up (gRPC's keep-alive,
// about 11s in the user's world; here at once): Unlock fails, the outcome
// unknown. A plain worker's deferred Unlock does not call again. The
// claim lives on the session's lease, which the session keeps alive: b
// must still get the lock within a few seconds, not when a's session
// ends; and a's Unlock, if called again, says nil (its hold was released
// by its own delete).
func TestUnlockGivenUpOnSessionStillReleases(t *testing.T) {
	leakcheck.Guard(t)
	ctx := context.Background()
	key := lockKey(t)
	w := newWire(t, endpoints[0])
	c := w.client(t)
	s, err := concurrency.NewSession(c, concurrency.WithTTL(10))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a := etcdlock.New(c, key, etcdlock.WithSession(s))
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	b := etcdlock.New(client(t), key)
	got := make(chan error, 1)
	bctx, cancel := context.WithTimeout(ctx, 8*time.Second)
	defer cancel()
	go func() { got <- b.Lock(bctx) }()
	locktest.Eventually(t, 5*time.Second, "b is in line", func() bool { return len(claims(t, client(t), key)) == 2 })
	held := make(chan *wireConn, 1)
	w.beforeCall(methodTxn, func(any) {
		conn := w.current()
		conn.hold()
		held <- conn
		go conn.giveUpWhenHeld()
	})
	err = a.Unlock(ctx)
	select {
	case <-held:
	default:
		t.Fatalf("a.Unlock = %v, and its delete was never sent (the fault did not take)", err)
	}
	if err == nil {
		t.Fatal("a.Unlock with its delete held and given up = nil; want a transport error (the fault did not take)")
	}
	t.Logf("a.Unlock, its delete held and given up = %v", err)
	if err := <-got; err != nil {
		t.Fatalf("b.Lock after a's Unlock gave up = %v; want nil within 8s (claims in line: %q; a's session lives on)", err, claims(t, client(t), key))
	}
	if err := a.Unlock(ctx); err != nil {
		t.Errorf("a.Unlock again, once its claim was deleted = %v; want nil", err)
	}
	if err := b.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if line := claims(t, client(t), key); len(line) != 0 {
		t.Errorf("claims after every client is done = %q; want none", line)
	}
}
