package redlock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/internal/keyslot"
	"github.com/locklab/locklab/internal/rig"
	"github.com/locklab/locklab/redlock"
)

// TestLateSetAfterUnlock: node 2's SET is held in the network past its
// per-node timeout; Lock returns at the majority of nodes 0 and 1, and
// Unlock releases the three nodes (node 2 has nothing yet). Then the held
// SET is delivered. It must not write the key: nobody holds the lock, and
// the key would stand on node 2 for a whole TTL (it did, with its PTTL
// near the TTL, and Unlock had returned nil).
func TestLateSetAfterUnlock(t *testing.T) {
	ctx := t.Context()
	key := newKey(t)
	ps, cs, _ := behindProxies(t, addrs[:3], rig.ClientOptions)
	const ttl = 20 * time.Second
	m := redlock.New(cs, key, redlock.WithTTL(ttl), redlock.WithNodeTimeout(100*time.Millisecond))
	// Warm on the key itself: the checks before Lock are remembered and
	// the scripts loaded, so the rule below catches the acquisition.
	if err := m.Lock(ctx); err != nil {
		t.Fatalf("warm-up Lock = %v", err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatalf("warm-up Unlock = %v", err)
	}
	settle(t, m)
	held := ps[2].Hold(faultproxy.Match{Key: key}, 1) // the SET (take.lua): the checks are remembered
	if err := m.Lock(ctx); err != nil {
		t.Fatalf("Lock = %v", err)
	}
	settle(t, m) // node 2's call has timed out
	if got := held.Caught(); len(got) != 1 {
		t.Fatalf("the rule held %q; want node 2's acquisition", got)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatalf("Unlock = %v", err)
	}
	settle(t, m)
	held.Release() // the late acquisition lands now
	if err := held.Answered(ctx, 1); err != nil {
		t.Fatal(err)
	}
	settle(t, m) // a release the late acquisition's end might send
	if h := holders(t, admin[:3], key); h[2] != "" {
		pttl := admin[2].PTTL(ctx, key).Val()
		t.Fatalf("after Unlock returned nil, node 2 holds the key again (%q, PTTL %v), written by the acquisition %s delivered late",
			h[2], pttl, fmt.Sprint(held.Caught()))
	}
}

// TestReleasedTokenTakesNothing: a release of a token that finds nothing
// on a node (the command taking it is still on its way) leaves its
// receipt, and the SET round's take.lua and a waiter's round (acquire.lua)
// of that token that land after it take nothing: no key, no queue entry.
func TestReleasedTokenTakesNothing(t *testing.T) {
	ctx := t.Context()
	c := admin[0]
	for _, script := range []string{"take", "acquire"} {
		key := newKey(t)
		tok := "w.60000.late." + script + ".1" // a waiter's token; take.lua takes any
		keys := []string{key, redlock.QueueKey(key), keyslot.Receipt(keyslot.Base(key), tok)}
		t.Cleanup(func() { _ = c.Del(context.Background(), keys[2]).Err() })
		code, err := redlock.Scripts["release"].Run(ctx, c, keys, tok, "60000", "1").Int64()
		if err != nil || code != 0 {
			t.Fatalf("release.lua of a token the node never had = %d, %v; want 0", code, err)
		}
		var got any
		switch script {
		case "take":
			got, err = redlock.Scripts["take"].Run(ctx, c, []string{key, keys[2]}, tok, 60000).Result()
		case "acquire":
			got, err = redlock.Scripts["acquire"].Run(ctx, c, keys, tok, 100, 60000, "", "0", "0").Result()
		}
		if err != nil {
			t.Fatal(err)
		}
		if v := c.Get(ctx, key).Val(); v != "" || got != int64(0) {
			t.Errorf("%s.lua of a released token = %v, and the key holds %q; want 0 and no key", script, got, v)
		}
		if n := c.ZCard(ctx, redlock.QueueKey(key)).Val(); n != 0 {
			t.Errorf("%s.lua of a released token queued it (%d waiters)", script, n)
		}
	}
}
