package redlock_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/internal/locktest"
	"github.com/locklab/locklab/internal/rig"
	"github.com/locklab/locklab/redlock"
)

// These tests pin what the two loops that send a round again while the
// nodes are busy do (Unlock's release, a waiter's round in the queues):
// they moved onto package retry, and must behave as before.

// countPoint returns a hook option that counts how often point is passed.
func countPoint(point string) (redlock.Option, *atomic.Int32) {
	var n atomic.Int32
	return redlock.WithHook(func(_ context.Context, p string) {
		if p == point {
			n.Add(1)
		}
	}), &n
}

// TestUnlockSendsTheReleaseAgainToBusyNodes: every node is slow to answer
// the first release (it is held in the network past the per-node timeout),
// as busy nodes on a loaded machine are. Unlock must send the release
// again (its receipt makes a second run answer as the first) and return
// nil once a majority has released, well within the release timeout, not
// give up with ErrQuorumUnreachable and leave the lock to its TTL.
func TestUnlockSendsTheReleaseAgainToBusyNodes(t *testing.T) {
	ctx := t.Context()
	key := newKey(t)
	ps, cs, _ := behindProxies(t, addrs[:3], rig.ClientOptions)
	locktest.Warm(t, ctx, redlock.New(cs, key+":warm"))
	hook, releases := countPoint(redlock.HookBeforeRelease)
	m := redlock.New(cs, key, redlock.WithTTL(10*time.Second), redlock.WithNodeTimeout(50*time.Millisecond), hook)
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	settle(t, m)
	var held []*faultproxy.Rule
	for _, p := range ps {
		held = append(held, p.Hold(faultproxy.Match{Command: "EVALSHA", Key: key}, 1))
	}
	start := time.Now()
	err := m.Unlock(ctx)
	took := time.Since(start)
	for _, r := range held {
		r.Release() // the nodes catch up: the first releases land, and answer from the receipt
	}
	if err != nil {
		t.Fatalf("Unlock whose first release only timed out = %v; want nil (sent again)", err)
	}
	if hits := hitsOf(held); !slices.Equal(hits, []int{1, 1, 1}) {
		t.Fatalf("the first releases were not held (hits %v)", hits)
	}
	if n := releases.Load(); n < 2 {
		t.Errorf("Unlock sent %d release rounds; want at least 2", n)
	}
	if took >= time.Second {
		t.Errorf("Unlock took %v; want well within the release timeout (2s): a pause of 50-100ms, then the second round", took)
	}
	settle(t, m)
	eventually(t, "the key gone from every node", func() (bool, string) {
		got := holders(t, admin[:3], key)
		return slices.Equal(got, []string{"", "", ""}), ""
	})
}

// TestUnlockDoesNotResendToRefusingNodes: a majority of nodes refuse the
// connection (down, not busy). Sending again cannot help until they come
// back, so Unlock makes one release round and returns ErrQuorumUnreachable
// naming them.
func TestUnlockDoesNotResendToRefusingNodes(t *testing.T) {
	ctx := t.Context()
	key := newKey(t)
	ps, cs, _ := behindProxies(t, addrs[:3], rig.ClientOptions)
	locktest.Warm(t, ctx, redlock.New(cs, key+":warm"))
	hook, releases := countPoint(redlock.HookBeforeRelease)
	m := redlock.New(cs, key, redlock.WithTTL(10*time.Second), redlock.WithNodeTimeout(200*time.Millisecond), hook)
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	settle(t, m)
	for _, p := range ps[1:] {
		p.Reset()
	}
	err := m.Unlock(ctx)
	for _, p := range ps[1:] {
		p.Heal()
	}
	if !errors.Is(err, redlock.ErrQuorumUnreachable) || len(nodeErrors(err)) != 2 {
		t.Fatalf("Unlock with 2 of 3 nodes refusing = %v; want ErrQuorumUnreachable naming 2 nodes", err)
	}
	if n := releases.Load(); n != 1 {
		t.Errorf("Unlock sent %d release rounds to refusing nodes; want 1", n)
	}
}

// TestQueuedRoundSentAgainToBusyNodes: a waiter's first round in the
// queues is held in the network past the per-node timeout on every node.
// The waiter must send the round again (after a short pause, while its
// context lives) rather than leave the queues with ErrQuorumUnreachable,
// and get the lock when the holder lets go.
func TestQueuedRoundSentAgainToBusyNodes(t *testing.T) {
	ctx := locktest.Context(t)
	key := newKey(t)
	ps, cs, _ := behindProxies(t, addrs[:3], rig.ClientOptions)
	n := notifierOn(t, cs)
	locktest.Warm(t, ctx, redlock.New(cs, key+":warm", redlock.WithNotifier(n)))
	holder := redlock.New(cs, key, redlock.WithTTL(10*time.Second))
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	settle(t, holder)
	var held []*faultproxy.Rule
	for _, p := range ps {
		held = append(held, p.Hold(faultproxy.Match{Command: "EVALSHA", Script: redlock.Scripts["acquire"].Hash(), Key: key}, 1))
	}
	points, log := recordPoints()
	w := redlock.New(cs, key, redlock.WithTTL(10*time.Second), redlock.WithNodeTimeout(50*time.Millisecond),
		redlock.WithNotifier(n), points)
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	done := lockAsync(lctx, w)
	select {
	case <-log.queued:
	case err := <-done:
		t.Fatalf("Lock whose first round in the queues only timed out = %v before it queued; want it to send the round again", err)
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter did not queue within 5s of its first round timing out")
	}
	if hits := hitsOf(held); !slices.Equal(hits, []int{1, 1, 1}) {
		t.Fatalf("the first rounds were not held (hits %v)", hits)
	}
	for _, r := range held {
		r.Release()
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Lock whose first round in the queues only timed out = %v; want nil (sent again, then handed the lock)", err)
	}
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
