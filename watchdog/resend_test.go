package watchdog_test

import (
	"context"
	"testing"
	"time"

	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/internal/locktest"
	"github.com/locklab/locklab/internal/take"
	"github.com/locklab/locklab/watchdog"
)

// TestAcquireAndReleaseSentTwice: the acquisition (take.lua) lands and its
// reply is lost; go-redis sends it again, and the second run finds our own
// token: Lock
// must know the lock is ours (it used to answer "taken" and wait a whole
// TTL for its own key). Then the release's reply is lost and it is sent
// again: Unlock must still report the release.
func TestAcquireAndReleaseSentTwice(t *testing.T) {
	p, c := locktest.ThroughProxy(t, rdb.Options().Addr)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second) // half the TTL
	defer cancel()
	locktest.Warm(t, ctx, watchdog.New(c, newKey(t)))

	key := newKey(t)
	m := watchdog.New(c, key)
	locktest.LoseReply(t, p, faultproxy.Match{Script: take.Script.Hash(), Key: key}, "Lock", func() error { return m.Lock(ctx) })
	locktest.LoseReply(t, p, faultproxy.Match{Command: "EVALSHA", Key: key}, "Unlock", func() error { return m.Unlock(ctx) })
	locktest.CheckGone(t, rdb, key, "after Unlock")
}
