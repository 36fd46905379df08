package fencing_test

import (
	"testing"

	"github.com/locklab/locklab/fencing"
	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/internal/locktest"
)

// TestAcquireSentTwiceKeepsItsToken: the acquire script runs, its reply is
// lost, go-redis sends it again. The second run must find the lock ours
// and return the same token: not "taken" (the Mutex would forget its lock
// and the key block everyone for a TTL), and no token burned.
func TestAcquireSentTwiceKeepsItsToken(t *testing.T) {
	p, c := locktest.ThroughProxy(t, rdb.Options().Addr)
	ctx := t.Context()
	locktest.Warm(t, ctx, fencing.New(c, newKey(t)))

	key := newKey(t)
	counter, _ := fencing.CounterKey(key)
	m := fencing.New(c, key)
	locktest.LoseReply(t, p, faultproxy.Match{Command: "EVALSHA", Key: key}, "Lock", func() error { return m.Lock(ctx) })
	if got, want := m.Token().String(), rdb.Get(ctx, counter).Val(); got != want || got != "1" {
		t.Errorf("Token() = %s, counter = %s; want both 1 (one acquisition, one token)", got, want)
	}
	unlockOrFatal(t, m)
	lockOrFatal(t, m)
	if got := m.Token(); got != 2 {
		t.Errorf("next acquisition's token = %d; want 2 (none burned)", got)
	}
	unlockOrFatal(t, m)
}
