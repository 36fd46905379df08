package watchdog_test

import (
	"context"
	"testing"
	"time"

	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/internal/locktest"
	"github.com/locklab/locklab/watchdog"
)

// TestAcquireAndReleaseSentTwice: the SET lands and its reply is lost;
// go-redis sends it again, and the second SET finds our own token: Lock
// must know the lock is ours (it used to answer "taken" and wait a whole
// TTL for its own key). Then the release's reply is lost and it is sent
// again: Unlock must still report the release.
func TestAcquireAndReleaseSentTwice(t *testing.T) {
	p, c := locktest.ThroughProxy(t, rdb.Options().Addr)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second) // half the TTL
	defer cancel()
	warm := watchdog.New(c, newKey(t))
	if err := warm.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := warm.Unlock(ctx); err != nil {
		t.Fatal(err)
	}

	key := newKey(t)
	m := watchdog.New(c, key)
	lostSet := p.DropReply(faultproxy.Match{Command: "SET", Key: key}, 1)
	if err := m.Lock(ctx); err != nil {
		t.Fatalf("Lock whose SET reply was lost = %v; want nil", err)
	}
	if lostSet.Hits() != 1 {
		t.Fatalf("the SET's reply was not lost (%d hits)", lostSet.Hits())
	}
	lostRelease := p.DropReply(faultproxy.Match{Command: "EVALSHA", Key: key}, 1)
	if err := m.Unlock(ctx); err != nil {
		t.Fatalf("Unlock whose reply was lost = %v; want nil", err)
	}
	if lostRelease.Hits() != 1 {
		t.Fatalf("the release's reply was not lost (%d hits)", lostRelease.Hits())
	}
	if n := rdb.Exists(ctx, key).Val(); n != 0 {
		t.Errorf("EXISTS after Unlock = %d; want 0", n)
	}
}
