package redlock_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/internal/locktest"
	"github.com/locklab/locklab/internal/rig"
	"github.com/locklab/locklab/redlock"
)

// behindProxies returns a proxy in front of each address, and one go-redis
// client per proxy made with opts (rig.UserOptions: go-redis's defaults,
// which send a command again when its reply is lost).
func behindProxies(t *testing.T, addrs []string, opts func(string) *redis.Options) ([]*faultproxy.Proxy, []redlock.Client, []*redis.Client) {
	t.Helper()
	ps := make([]*faultproxy.Proxy, len(addrs))
	cs := make([]redlock.Client, len(addrs))
	rs := make([]*redis.Client, len(addrs))
	for i, a := range addrs {
		ps[i] = faultproxy.Start(t, a)
		rs[i] = redis.NewClient(opts(ps[i].Addr()))
		t.Cleanup(func() { _ = rs[i].Close() })
		cs[i] = rs[i]
	}
	return ps, cs, rs
}

// TestAttemptsUseTheirOwnTokens: a polling Lock's first attempt takes
// nodes 2-4 (B holds 0 and 1) but too late to leave any validity (the
// attempt is parked at HookAcquiredQuorum until its keys expire), so it
// releases its token there, and that cleanup is held up in the network.
// B lets go; the second attempt takes all five nodes. Then the late
// cleanup lands. It must not touch what the second attempt took: with one
// token for every attempt of a Lock it did, leaving A with two of five
// nodes while it believed it held the lock, and C took the other three.
func TestAttemptsUseTheirOwnTokens(t *testing.T) {
	ctx := t.Context()
	key := newKey(t)
	ps, cs, _ := behindProxies(t, addrs, rig.ClientOptions)
	// Load the scripts on every node first: a held EVALSHA of a script the
	// node has not seen would land as a harmless NOSCRIPT, and the test
	// would prove nothing.
	locktest.Warm(t, ctx, redlock.New(cs, key+":warm"))
	b := redlock.New(clientsFor(t, addrs[:2]), key) // nodes 0 and 1
	if ok, err := b.TryLock(ctx); err != nil || !ok {
		t.Fatalf("B's TryLock = %v, %v", ok, err)
	}
	const ttl = 500 * time.Millisecond
	var held []*faultproxy.Rule
	parked := false
	a := redlock.New(cs, key, redlock.WithTTL(ttl), redlock.WithNodeTimeout(100*time.Millisecond), redlock.WithTries(2),
		redlock.WithHook(func(_ context.Context, point string) {
			switch {
			case point == redlock.HookAcquiredQuorum && !parked:
				parked = true // the first attempt: wait out its keys' TTL
				eventually(t, "the first attempt's keys to expire", func() (bool, string) {
					h := holders(t, admin[2:], key)
					return h[0] == "" && h[1] == "" && h[2] == "", fmt.Sprintf("nodes 2-4 %q", h)
				})
			case point == redlock.HookBeforeRelease && held == nil:
				for _, p := range ps[2:] { // its cleanup waits in the network
					held = append(held, p.Hold(faultproxy.Match{Command: "EVALSHA", Key: key}, 1))
				}
			}
		}),
		redlock.WithRetry(func(int) time.Duration {
			// Between the attempts: the cleanup has timed out on A's side,
			// still in the network, and B lets go.
			if err := b.Unlock(ctx); err != nil {
				t.Errorf("B's Unlock = %v", err)
			}
			return 0
		}))
	if err := a.Lock(ctx); err != nil {
		t.Fatalf("A's Lock = %v", err)
	}
	settle(t, a)
	if len(held) != 3 || hitsOf(held)[0] != 1 {
		t.Fatalf("the first attempt's cleanup was not held (%d rules, hits %v)", len(held), hitsOf(held))
	}
	for _, r := range held {
		r.Release() // the first attempt's cleanup lands now
		if err := r.Answered(ctx, 1); err != nil {
			t.Fatal(err)
		}
	}
	c := redlock.New(clientsFor(t, addrs), key)
	if ok, err := c.TryLock(ctx); ok || err != nil {
		t.Errorf("C's TryLock while A holds (nodes %q, A's token %q) = %v, %v; want false, nil", holders(t, admin, key), a.Token(), ok, err)
		if ok {
			_ = c.Unlock(ctx)
		}
	}
	if time.Now().After(a.Until()) {
		t.Fatal("A's validity ran out during the test; the check above proves nothing")
	}
	if err := a.Unlock(ctx); err != nil {
		t.Errorf("A's Unlock = %v", err)
	}
}

func hitsOf(rs []*faultproxy.Rule) []int {
	var out []int
	for _, r := range rs {
		out = append(out, r.Hits())
	}
	return out
}

// TestReusedMutexRecoversFromAFullRestart: every node is killed while
// eight Mutexes with a Notifier keep locking and unlocking, as a service
// would, and restarted empty. Each Mutex must lock again within a second
// of the nodes being back. (They made no progress for 6-10s: each node's
// commands queued behind calls stuck on dead connections, "an earlier
// command to this node had not ended".)
func TestReusedMutexRecoversFromAFullRestart(t *testing.T) {
	ctx := t.Context()
	nodes := startNodes(t, 5)
	cs := make([]redlock.Client, len(nodes))
	ncs := make([]redlock.NotifyClient, len(nodes))
	for i, nd := range nodes {
		c := redis.NewClient(rig.UserOptions(nd.Addr()))
		t.Cleanup(func() { _ = c.Close() })
		cs[i], ncs[i] = c, c
	}
	n, err := redlock.NewNotifier(ctx, ncs)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	key := newKey(t)
	const workers = 8
	var (
		mu     sync.Mutex
		back   time.Time                 // when the nodes were all back; zero before
		locked = map[int]time.Duration{} // worker -> first Lock after back
		stop   = make(chan struct{})
		wg     sync.WaitGroup
	)
	for w := range workers {
		m := redlock.New(cs, key, redlock.WithNotifier(n), redlock.WithTTL(2*time.Second))
		wg.Go(func() {
			for i := 0; i < 100000; i++ {
				select {
				case <-stop:
					return
				default:
				}
				try, cancel := context.WithTimeout(ctx, time.Second)
				err := m.Lock(try)
				cancel()
				if err != nil {
					continue
				}
				mu.Lock()
				if !back.IsZero() {
					if _, seen := locked[w]; !seen {
						locked[w] = time.Since(back)
					}
				}
				mu.Unlock()
				_ = m.Unlock(ctx)
			}
		})
	}
	time.Sleep(200 * time.Millisecond) // the workers take turns: the load the restart hits
	for _, nd := range nodes {
		if err := nd.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(500 * time.Millisecond) // the workers meet dead nodes
	for _, nd := range nodes {
		if err := nd.Restart(ctx, false); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	back = time.Now()
	mu.Unlock()
	deadline := time.Now().Add(15 * time.Second)
	for {
		mu.Lock()
		done := len(locked) == workers
		mu.Unlock()
		if done || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(locked) < workers {
		t.Fatalf("%d of %d Mutexes locked again within 15s of the nodes coming back: %v", len(locked), workers, locked)
	}
	t.Logf("after all %d nodes restarted empty, each Mutex locked again within: %v", len(nodes), locked)
	for w, d := range locked {
		if d > time.Second {
			t.Errorf("Mutex %d locked %v after the nodes came back; want within 1s (all: %v)", w, d, locked)
		}
	}
}

// TestStaleEntryOfALiveProcessCostsOneHop: five tokens of waiters that
// have gone sit in every queue ahead of a live waiter, and their process's
// Notifier is alive, so PUBLISH counts them as listening. (Such entries
// come from a waiter that gave up while its join of the queues was still
// in the network: the join lands after it left; correct's
// TestStaleEntryOfALiveProcessCostsOneHop makes them that way, through the
// proxy; here they are put in the queues directly, five deterministic
// ones, rather than however many a race leaves.) The live waiter must get
// the lock within a few hops of the release, not after five TTLs. (At TTL
// 1s it waited 5.1s: each stale entry held the lock for its TTL; after
// 1,600 cancelled Locks a fresh Lock with a 10s deadline failed.)
func TestStaleEntryOfALiveProcessCostsOneHop(t *testing.T) {
	ctx := t.Context()
	const ttl = time.Second
	key := newKey(t)
	cs, n := withNotifier(t, addrs)
	holder := redlock.New(clientsFor(t, addrs), key, redlock.WithTTL(time.Minute))
	mustLock(t, ctx, holder)
	live, got := queueWaiter(t, ctx, cs, key, redlock.WithNotifier(n), redlock.WithTTL(ttl))
	mine := lastQueued(t, key) // "<notifier id>.<ttl>.<random>.<generation>"
	notifier := strings.SplitN(mine, ".", 2)[0]
	score := queued(t, admin[0], key)[0].Score
	for i := range 5 {
		gone := redis.Z{Score: score - float64(5-i), Member: fmt.Sprintf("%s.1000.gone%d.1", notifier, i)}
		for _, c := range admin {
			if err := c.ZAdd(ctx, redlock.QueueKey(key), gone).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Each stale entry costs one hop (the Notifier releases the node on
	// the spot): well under 250ms. The bug cost a TTL each.
	locktest.HandedOnWithin(t, ctx, holder, live, got, ttl/4, "behind 5 stale entries")
	checkNoTrace(t, admin, key)
}

// TestTimeoutsAreRetriedWhileTheContextLives: every node is slow for a
// moment (the first SET, take.lua, to each is held in the network past the per-node
// timeout), as busy nodes on a loaded machine are. Lock must try again
// while its context lives, not give up with "quorum unreachable"; the late
// SETs, landing after their attempt was given up, must not be left
// holding the nodes. (Hundreds of Locks under load ended with "quorum
// unreachable: no reply within the per-node timeout" while their context
// still had seconds to run.)
func TestTimeoutsAreRetriedWhileTheContextLives(t *testing.T) {
	ctx := t.Context()
	key := newKey(t)
	ps, cs, _ := behindProxies(t, addrs[:3], rig.ClientOptions)
	locktest.Warm(t, ctx, redlock.New(cs, key+":warm"))
	var held []*faultproxy.Rule
	for _, p := range ps {
		held = append(held, p.Hold(faultproxy.Match{Script: redlock.Scripts["take"].Hash(), Key: key}, 1))
	}
	m := redlock.New(cs, key, redlock.WithTTL(5*time.Second), redlock.WithNodeTimeout(50*time.Millisecond),
		redlock.WithRetry(func(int) time.Duration {
			for _, r := range held { // the nodes catch up: the late SETs land
				r.Release()
			}
			return time.Millisecond
		}))
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := m.Lock(lctx); err != nil {
		t.Fatalf("Lock whose first round only timed out = %v; want nil (tried again while its context lived)", err)
	}
	if hits := hitsOf(held); hits[0] != 1 || hits[1] != 1 || hits[2] != 1 {
		t.Fatalf("the first SETs were not held (hits %v)", hits)
	}
	settle(t, m)
	want := []string{m.Token(), m.Token(), m.Token()}
	eventually(t, "every node to hold the Mutex's token", func() (bool, string) {
		got := holders(t, admin[:3], key)
		return slices.Equal(got, want), fmt.Sprintf("nodes hold %q; want %q", got, want)
	})
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
