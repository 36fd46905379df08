package zklock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/internal/rig"
	"github.com/locklab/locklab/zklock"
)

// TestUnlockGivenUpStillReleases: an Unlock that gives up (its delete
// unanswered for its 2s bound: a partition, or an ensemble electing a
// leader for longer, as the fault scoreboard's crash schedule showed) must
// not leave the child at the head of the line for as long as the
// holder's session lives: once ZooKeeper answers again, the child goes,
// without a second Unlock, and the next client gets the lock well within
// the session timeout.
func TestUnlockGivenUpStillReleases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const session = 20 * time.Second // lives on through the cut: the child would too
	z := rig.StartZooKeeper(t, 1, rig.WithZooKeeperForTests())
	proxy := faultproxy.Start(t, z.Addrs()[0])
	cut := sessionOf(t, session, proxy.Addr())
	direct := sessionOf(t, timeout, z.Addrs()...)
	p := lockPath(t)
	a := zklock.New(cut, p)
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	// Every connection reset, new ones too, until the heal: the delete
	// never reaches the server (a held one would land at the heal).
	proxy.Reset()
	if err := a.Unlock(ctx); err == nil || errors.Is(err, zklock.ErrNotHeld) {
		t.Fatalf("Unlock while ZooKeeper cannot be reached = %v; want a transport error", err)
	}
	proxy.Heal()
	b := zklock.New(direct, p)
	bctx, cancel := context.WithTimeout(ctx, session/4)
	defer cancel()
	if err := b.Lock(bctx); err != nil {
		t.Fatalf("b.Lock within %v after a's Unlock gave up and ZooKeeper answers again = %v; want the lock (children: %q): a child whose Unlock gave up stays at the head of the line while its session lives", session/4, err, children(t, direct, p))
	}
	if err := b.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	// The first Unlock's outcome is known by now: a second says so.
	if err := a.Unlock(ctx); err != nil && !errors.Is(err, zklock.ErrNotHeld) {
		t.Errorf("a's second Unlock = %v; want nil or ErrNotHeld", err)
	}
}

// sessionOf is session, named apart from the test's variable above.
func sessionOf(t *testing.T, d time.Duration, addrs ...string) *zklock.Session {
	t.Helper()
	return session(t, d, addrs...)
}

// TestUnlockAfterSessionClosed: a holds the lock, and its Session is
// closed (a shutdown that closes it before the holder's Unlock runs, or
// another goroutine's): ZooKeeper deleted a's child with the session, so
// the lock is free, and another client gets it at once. a's Unlock then
// must say so, ErrNotHeld, as it does for a session that ended otherwise,
// not a transport error that reads as "outcome unknown, try again".
func TestUnlockAfterSessionClosed(t *testing.T) {
	ctx := context.Background()
	p := lockPath(t)
	s := session(t, timeout)
	a := zklock.New(s, p)
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	s.Close()
	select {
	case <-a.Done():
	default:
		t.Error("a's Done is open after its Session was closed")
	}
	b := zklock.New(session(t, timeout), p)
	bctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := b.Lock(bctx); err != nil {
		t.Fatalf("b.Lock after a's Session was closed = %v; want the lock at once", err)
	}
	if err := a.Unlock(ctx); !errors.Is(err, zklock.ErrNotHeld) {
		t.Errorf("a.Unlock after its Session was closed = %v; want ErrNotHeld", err)
	}
	if err := b.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
