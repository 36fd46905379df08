package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/leakcheck"
	"github.com/locklab/locklab/internal/locktest"
	"github.com/locklab/locklab/internal/observetest"
	"github.com/locklab/locklab/internal/rig"
	"github.com/locklab/locklab/redlock"
)

func TestLockHoldsOnEveryNodeUntilUnlock(t *testing.T) {
	ctx := locktest.Context(t)
	key := newKey(t)
	const ttl = 10 * time.Second
	m := redlock.New(clientsFor(t, addrs), key, redlock.WithTTL(ttl))
	before := time.Now()
	if err := m.Lock(ctx); err != nil {
		t.Fatalf("Lock() = %v; want nil", err)
	}
	after := time.Now()
	tok := m.Token()
	if len(tok) != 22 {
		t.Fatalf("Token() = %q; want a 22-character token", tok)
	}
	// Lock returns once a majority holds the token; the SETs still in
	// flight to the others land at once after.
	now := holders(t, admin, key)
	if n := len(slices.DeleteFunc(slices.Clone(now), func(v string) bool { return v != tok })); n < len(admin)/2+1 {
		t.Errorf("right after Lock, nodes hold %q; want our token %q on a majority", now, tok)
	}
	waitHolders(t, admin, key, slices.Repeat([]string{tok}, len(admin)))
	// Until is t0 + ttl - drift, with t0 taken inside Lock.
	drift := redlock.Drift(ttl)
	if u := m.Until(); u.Before(before.Add(ttl-drift)) || u.After(after.Add(ttl-drift)) {
		t.Errorf("Until() = now%+v; want within [%v, %v] from now", time.Until(u), time.Until(before.Add(ttl-drift)), time.Until(after.Add(ttl-drift)))
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatalf("Unlock() = %v; want nil", err)
	}
	settle(t, m) // Unlock returned at a majority; the rest land now
	if got := holders(t, admin, key); !slices.Equal(got, make([]string, len(admin))) {
		t.Errorf("after Unlock, nodes hold %q; want the key gone everywhere", got)
	}
	if !m.Until().IsZero() || m.Token() != "" {
		t.Errorf("after Unlock, Until() = %v, Token() = %q; want zero values", m.Until(), m.Token())
	}
}

func TestTryLockReportsContentionAsFalseNil(t *testing.T) {
	ctx := locktest.Context(t)
	key := newKey(t)
	cs := clientsFor(t, addrs)
	c1, c2 := redlock.New(cs, key), redlock.New(cs, key)
	if ok, err := c1.TryLock(ctx); !ok || err != nil {
		t.Fatalf("c1.TryLock() = %v, %v; want true, nil", ok, err)
	}
	if ok, err := c2.TryLock(ctx); ok || err != nil {
		t.Fatalf("c2.TryLock() while c1 holds = %v, %v; want false, nil", ok, err)
	}
	if err := c1.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := c2.TryLock(ctx); !ok || err != nil {
		t.Fatalf("c2.TryLock() after c1 unlocked = %v, %v; want true, nil", ok, err)
	}
	if err := c2.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// sameNode returns a client for addr spelled as an IPv4-mapped IPv6
// address: the same server, by another name.
func sameNode(t *testing.T, addr string) redlock.Client {
	t.Helper()
	_, port, _ := net.SplitHostPort(addr)
	return clientsFor(t, []string{"[::ffff:127.0.0.1]:" + port})[0]
}

func TestBadInputIsAnErrorNotAPanic(t *testing.T) {
	cs := clientsFor(t, addrs)
	var nilClient *redis.Client
	locktest.RefusesInvalid(t, redlock.ErrInvalid, map[string]*redlock.Mutex{
		"no clients":                 redlock.New(nil, "k"),
		"nil client":                 redlock.New([]redlock.Client{cs[0], nil, cs[2]}, "k"),
		"typed nil client":           redlock.New([]redlock.Client{cs[0], nilClient, cs[2]}, "k"),
		"same node twice":            redlock.New([]redlock.Client{cs[0], cs[1], cs[0]}, "k"),
		"empty key":                  redlock.New(cs, ""),
		"zero ttl":                   redlock.New(cs, "k", redlock.WithTTL(0)),
		"negative ttl":               redlock.New(cs, "k", redlock.WithTTL(-time.Second)),
		"sub-millisecond ttl":        redlock.New(cs, "k", redlock.WithTTL(time.Microsecond)),
		"zero node timeout":          redlock.New(cs, "k", redlock.WithNodeTimeout(0)),
		"node timeout not below ttl": redlock.New(cs, "k", redlock.WithTTL(time.Second), redlock.WithNodeTimeout(time.Second)),
		"negative tries":             redlock.New(cs, "k", redlock.WithTries(-1)),
		"one node named two ways":    redlock.New([]redlock.Client{cs[0], sameNode(t, addrs[0]), cs[2]}, "k"),
	}, func(t *testing.T, m *redlock.Mutex) {
		if err := m.Settle(context.Background()); !errors.Is(err, redlock.ErrInvalid) {
			t.Errorf("Settle() = %v; want ErrInvalid", err)
		}
	})
}

func TestUnlockWhenNotHeld(t *testing.T) {
	ctx := locktest.Context(t)
	cs := clientsFor(t, addrs)

	t.Run("never locked", func(t *testing.T) {
		m := redlock.New(cs, newKey(t))
		if err := m.Unlock(ctx); !errors.Is(err, redlock.ErrNotHeld) {
			t.Errorf("Unlock() = %v; want ErrNotHeld", err)
		}
	})
	t.Run("twice", func(t *testing.T) {
		m := redlock.New(cs, newKey(t))
		if err := m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := m.Unlock(ctx); err != nil {
			t.Fatalf("first Unlock() = %v; want nil", err)
		}
		if err := m.Unlock(ctx); !errors.Is(err, redlock.ErrNotHeld) {
			t.Errorf("second Unlock() = %v; want ErrNotHeld", err)
		}
	})
	t.Run("after expiry", func(t *testing.T) {
		key := newKey(t)
		m := redlock.New(cs, key, redlock.WithTTL(100*time.Millisecond), redlock.WithNodeTimeout(50*time.Millisecond))
		if err := lockWithin(ctx, m); err != nil {
			t.Fatal(err)
		}
		waitGone(t, admin, key)
		if err := m.Unlock(ctx); !errors.Is(err, redlock.ErrNotHeld) {
			t.Errorf("Unlock() after the keys expired = %v; want ErrNotHeld", err)
		}
	})
	t.Run("taken over", func(t *testing.T) {
		key := newKey(t)
		m := redlock.New(cs, key)
		if err := m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		for _, c := range admin { // an operator replaces the key everywhere
			if err := c.Set(ctx, key, "someone else", time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
		}
		if err := m.Unlock(ctx); !errors.Is(err, redlock.ErrNotHeld) {
			t.Errorf("Unlock() of a taken-over lock = %v; want ErrNotHeld", err)
		}
		for i, v := range holders(t, admin, key) {
			if v != "someone else" {
				t.Errorf("node %d holds %q after our Unlock; want the other holder's key untouched", i, v)
			}
		}
	})
}

// lockWithin retries TryLock until it gets the lock on the shared nodes,
// which are all up: with a very short TTL and node timeout, a round slowed
// down by a loaded machine may leave no validity or miss the node timeout.
func lockWithin(ctx context.Context, m *redlock.Mutex) error {
	for {
		ok, err := m.TryLock(ctx)
		if ok {
			return nil
		}
		if ctx.Err() != nil || err != nil && !errors.Is(err, redlock.ErrNotObtained) && !errors.Is(err, redlock.ErrQuorumUnreachable) {
			return err
		}
	}
}

// waitGone polls until key is missing on every node.
func waitGone(t testing.TB, cs []*redis.Client, key string) {
	t.Helper()
	waitHolders(t, cs, key, make([]string, len(cs)))
}

// settle waits until the SETs m's Lock left in flight have ended: tests
// that then queue waiters or touch the nodes need the holder's token on
// every node first, not just on the majority Lock returned at.
func settle(t testing.TB, m *redlock.Mutex) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := m.Settle(ctx); err != nil {
		t.Fatalf("Settle() = %v; want nil", err)
	}
}

// waitHolders waits until node i holds want[i] ("" for no key) for every i.
func waitHolders(t testing.TB, cs []*redis.Client, key string, want []string) {
	t.Helper()
	eventually(t, fmt.Sprintf("key %q held as %q", key, want), func() (bool, string) {
		got := holders(t, cs, key)
		return slices.Equal(got, want), fmt.Sprintf("nodes hold %q", got)
	})
}

func TestExtend(t *testing.T) {
	ctx := locktest.Context(t)
	cs := clientsFor(t, addrs)
	const ttl = 10 * time.Second
	// held returns a Mutex with that TTL on a fresh key, locked, and
	// unlocked when the subtest ends.
	held := func(t *testing.T) (*redlock.Mutex, string) {
		t.Helper()
		key := newKey(t)
		m := redlock.New(cs, key, redlock.WithTTL(ttl))
		if err := m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = m.Unlock(context.Background()) })
		return m, key
	}

	t.Run("moves Until and resets the TTL", func(t *testing.T) {
		m, key := held(t)
		first := m.Until()
		for _, c := range admin { // let the keys age, as time would
			if err := c.PExpire(ctx, key, ttl/2).Err(); err != nil {
				t.Fatal(err)
			}
		}
		if err := m.Extend(ctx, ttl); err != nil {
			t.Fatalf("Extend() = %v; want nil", err)
		}
		if !m.Until().After(first) {
			t.Errorf("Until() after Extend = %v; want after %v", m.Until(), first)
		}
		// Extend returns once a majority is extended; on a loaded machine a
		// node may be slower than the rest (or have missed the acquire),
		// so only a majority must show the new TTL at once.
		extended, seen := 0, []string{}
		for i, c := range admin {
			pttl, err := c.PTTL(ctx, key).Result()
			if err != nil {
				t.Fatalf("node %d PTTL: %v", i, err)
			}
			if pttl > ttl/2 {
				extended++
			}
			seen = append(seen, pttl.String())
		}
		if extended < len(admin)/2+1 {
			t.Errorf("PTTL after Extend on the nodes = %v; want a majority above %v", seen, ttl/2)
		}
	})
	t.Run("fails when a majority lost the token", func(t *testing.T) {
		m, key := held(t)
		settle(t, m) // no SET still in flight to undo what follows
		until := m.Until()
		for _, c := range admin[:3] { // the key expired early on 3 of 5 nodes
			if err := c.Del(ctx, key).Err(); err != nil {
				t.Fatal(err)
			}
		}
		if err := m.Extend(ctx, ttl); !errors.Is(err, redlock.ErrNotHeld) {
			t.Errorf("Extend() with the token on 2 of 5 nodes = %v; want ErrNotHeld", err)
		}
		if m.Until() != until {
			t.Errorf("Until() after a failed Extend = %v; want unchanged %v", m.Until(), until)
		}
		if got := holders(t, admin, key)[:3]; !slices.Equal(got, []string{"", "", ""}) {
			t.Errorf("failed Extend recreated keys: %q", got)
		}
	})
	t.Run("not held", func(t *testing.T) {
		m := redlock.New(cs, newKey(t))
		if err := m.Extend(ctx, ttl); !errors.Is(err, redlock.ErrNotHeld) {
			t.Errorf("Extend() before Lock = %v; want ErrNotHeld", err)
		}
	})
	t.Run("to a shorter ttl", func(t *testing.T) {
		m, key := held(t)
		// Lock returns at a majority; a SET still on its way to a slower
		// node could land after the Extend below (calls to a node are not
		// ordered) and keep the long TTL there.
		settle(t, m)
		const short = 2 * time.Second
		before := time.Now()
		if err := m.Extend(ctx, short); err != nil {
			t.Fatalf("Extend(%v) = %v; want nil", short, err)
		}
		if u := m.Until(); u.Before(before.Add(short-redlock.Drift(short))) || u.After(time.Now().Add(short)) {
			t.Errorf("Until() after Extend(%v) = now%+v; want about %v from now", short, time.Until(u), short)
		}
		for i, c := range admin {
			if pttl, err := c.PTTL(ctx, key).Result(); err != nil || pttl > short {
				t.Errorf("node %d PTTL after Extend(%v) = %v, %v; want at most %v", i, short, pttl, err, short)
			}
		}
	})
	t.Run("ttl below 1ms", func(t *testing.T) {
		m, _ := held(t)
		for _, bad := range []time.Duration{0, -time.Second, time.Microsecond} {
			if err := m.Extend(ctx, bad); !errors.Is(err, redlock.ErrInvalid) {
				t.Errorf("Extend(%v) = %v; want ErrInvalid", bad, err)
			}
		}
	})
}

// TestFailedAttemptLeavesNoKey: another client holds the key on 3 of 5
// nodes, so our attempt gets only the other 2 and must delete its token
// from them, leaving the other holder's keys alone.
func TestFailedAttemptLeavesNoKey(t *testing.T) {
	ctx := locktest.Context(t)
	key := newKey(t)
	for _, c := range admin[:3] {
		if err := c.Set(ctx, key, "other", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var released atomic.Int32
	var onNodes []string
	hook := func(_ context.Context, point string) {
		if point == redlock.HookBeforeRelease {
			released.Add(1)
			onNodes = holders(t, admin, key) // our token is on nodes 3 and 4 now
		}
	}
	m := redlock.New(clientsFor(t, addrs), key, redlock.WithHook(hook))
	if ok, err := m.TryLock(ctx); ok || err != nil {
		t.Fatalf("TryLock() = %v, %v; want false, nil", ok, err)
	}
	if released.Load() != 1 || onNodes[3] == "" || onNodes[4] == "" {
		t.Fatalf("before release, nodes held %q (hook fired %d times); want our token on nodes 3 and 4", onNodes, released.Load())
	}
	want := []string{"other", "other", "other", "", ""}
	if got := holders(t, admin, key); !slices.Equal(got, want) {
		t.Errorf("after the failed attempt, nodes hold %q; want %q", got, want)
	}
}

// TestMinorityDown: 2 of 5 nodes killed, the lock still works.
func TestMinorityDown(t *testing.T) {
	rig.RequireControl(t)
	ctx := locktest.Context(t)
	nodes := startNodes(t, 5)
	for _, n := range nodes[:2] {
		if err := n.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	m := redlock.New(clientsFor(t, addrsOf(nodes)), "lock:minority")
	if err := m.Lock(ctx); err != nil {
		t.Fatalf("Lock() with 2 of 5 nodes down = %v; want nil", err)
	}
	if err := m.Extend(ctx, 8*time.Second); err != nil {
		t.Fatalf("Extend() with 2 of 5 nodes down = %v; want nil", err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatalf("Unlock() with 2 of 5 nodes down = %v; want nil", err)
	}
}

// TestMajorityDownFailsFast: with 3 of 5 nodes killed no quorum is
// possible; Lock must say so after one round, naming each failed node,
// instead of retrying for its 32 tries. With 3 of 5 frozen, the nodes only
// do not answer in time, as busy nodes on a loaded machine do: Lock tries
// again while its context lives, and then says why it gave up.
func TestMajorityDownFailsFast(t *testing.T) {
	rig.RequireControl(t)
	tests := []struct {
		name    string
		fault   func(*rig.Node) error
		errText string // in each NodeError
		retried bool   // Lock tries again (timeouts only)
	}{
		{"killed", (*rig.Node).Kill, "connection refused", false},
		{"frozen", (*rig.Node).Pause, "per-node timeout", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := locktest.Context(t)
			nodes := startNodes(t, 5)
			down := nodes[2:]
			for _, n := range down {
				if err := tt.fault(n); err != nil {
					t.Fatal(err)
				}
			}
			const ttl = 10 * time.Second
			var rounds atomic.Int32
			hook := func(_ context.Context, point string) {
				if point == redlock.HookBeforeRelease {
					rounds.Add(1)
				}
			}
			delay := ttl // a retry would show in the time taken
			if tt.retried {
				delay = 10 * time.Millisecond
			}
			m := redlock.New(clientsFor(t, addrsOf(nodes)), "lock:majority", redlock.WithTTL(ttl),
				redlock.WithNodeTimeout(300*time.Millisecond), redlock.WithHook(hook),
				redlock.WithRetry(func(int) time.Duration { return delay }))

			lctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
			defer cancel()
			start := time.Now()
			err := m.Lock(lctx)
			elapsed := time.Since(start)
			if !errors.Is(err, redlock.ErrQuorumUnreachable) {
				t.Fatalf("Lock() with 3 of 5 nodes down = %v; want ErrQuorumUnreachable", err)
			}
			switch {
			case !tt.retried && errors.Is(err, redlock.ErrNotObtained):
				t.Errorf("Lock() = %v; want a transport error, not ErrNotObtained", err)
			case !tt.retried && (elapsed > ttl/5 || rounds.Load() != 1):
				t.Errorf("Lock() took %v and %d rounds; want one round, well under the %v ttl", elapsed, rounds.Load(), ttl)
			case tt.retried && (!errors.Is(err, redlock.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded)):
				t.Errorf("Lock() = %v; want ErrNotObtained joined with the deadline and the last attempt's reason", err)
			case tt.retried && rounds.Load() < 2:
				t.Errorf("Lock() made %d rounds; want it to try again while its context lived", rounds.Load())
			}
			var got []string
			for _, ne := range nodeErrors(err) {
				got = append(got, ne.Addr)
				if ne.Index < 2 || !strings.Contains(ne.Error(), tt.errText) {
					t.Errorf("NodeError %v; want node 2, 3 or 4 failing with %q", ne, tt.errText)
				}
			}
			if want := addrsOf(down); !slices.Equal(got, want) {
				t.Errorf("NodeError addresses = %v; want the failed nodes %v\nerror:\n%v", got, want, err)
			}
			t.Logf("Lock() failed in %v:\n%v", elapsed, err)

			if ok, err := m.TryLock(ctx); ok || !errors.Is(err, redlock.ErrQuorumUnreachable) {
				t.Errorf("TryLock() = %v, %v; want false, ErrQuorumUnreachable", ok, err)
			}
			// Nothing is left on the live nodes.
			for i, n := range nodes[:2] {
				if v, _ := n.Client().Get(ctx, "lock:majority").Result(); v != "" {
					t.Errorf("live node %d holds %q after the failed attempts; want no key", i, v)
				}
			}
		})
	}
}

// TestFrozenNodeDoesNotStallAcquisition: one of 5 nodes is frozen with
// SIGSTOP. Acquisition waits for it only the per-node timeout, even with a
// client that ignores context deadlines and would wait a minute, and every
// goroutine ends once the node answers again.
func TestFrozenNodeDoesNotStallAcquisition(t *testing.T) {
	rig.RequireControl(t)
	tests := []struct {
		name string
		opt  func(*redis.Options)
	}{
		{"client honours deadlines", func(*redis.Options) {}},
		{"client ignores deadlines", func(o *redis.Options) {
			o.ContextTimeoutEnabled = false
			o.ReadTimeout, o.WriteTimeout = time.Minute, time.Minute
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := locktest.Context(t)
			nodes := startNodes(t, 5)
			cs := clientsFor(t, addrsOf(nodes), tt.opt)
			for _, c := range cs { // connect before the freeze: the pause hits an open connection
				if err := c.(*redis.Client).Ping(ctx).Err(); err != nil {
					t.Fatal(err)
				}
			}
			// Goroutines running now (servers' waiters, other tests' clients)
			// are not ours to check.
			noLeaks := leakcheck.Since(t)
			frozen := nodes[0]
			if err := frozen.Pause(); err != nil {
				t.Fatal(err)
			}
			const nodeTimeout = 300 * time.Millisecond
			m := redlock.New(cs, "lock:frozen", redlock.WithTTL(10*time.Second), redlock.WithNodeTimeout(nodeTimeout))
			start := time.Now()
			if err := m.Lock(ctx); err != nil {
				t.Fatalf("Lock() with 1 of 5 nodes frozen = %v; want nil", err)
			}
			// Lock and Unlock return as soon as a majority answered: the
			// frozen node delays neither.
			if elapsed := time.Since(start); elapsed >= nodeTimeout {
				t.Errorf("Lock() took %v; want well under the %v per-node timeout", elapsed, nodeTimeout)
			}
			start = time.Now()
			if err := m.Unlock(ctx); err != nil {
				t.Fatalf("Unlock() with 1 of 5 nodes frozen = %v; want nil", err)
			}
			if elapsed := time.Since(start); elapsed >= nodeTimeout {
				t.Errorf("Unlock() took %v; want well under the %v per-node timeout", elapsed, nodeTimeout)
			}
			if err := frozen.Resume(); err != nil {
				t.Fatal(err)
			}
			// The calls still blocked on the frozen node get their replies
			// now and their goroutines end.
			noLeaks()
		})
	}
}

// TestPauseAfterQuorumIsRefused is Kleppmann's scenario 10: the client
// gets a majority of OKs, then pauses until its keys have expired. The
// validity check measures the pause and refuses the lock.
func TestPauseAfterQuorumIsRefused(t *testing.T) {
	ctx := locktest.Context(t)
	key := newKey(t)
	paused := false
	hook := func(_ context.Context, point string) {
		if point == redlock.HookAcquiredQuorum && !paused {
			paused = true
			waitGone(t, admin, key) // the pause outlasts the keys
		}
	}
	m := redlock.New(clientsFor(t, addrs), key, redlock.WithTTL(500*time.Millisecond),
		redlock.WithNodeTimeout(250*time.Millisecond), redlock.WithHook(hook))
	ok, err := m.TryLock(ctx)
	for !paused && errors.Is(err, redlock.ErrQuorumUnreachable) && ctx.Err() == nil {
		ok, err = m.TryLock(ctx) // a loaded machine missed the node timeout; the scenario needs a majority
	}
	if ok || !errors.Is(err, redlock.ErrNotObtained) {
		t.Fatalf("TryLock() after a pause longer than the ttl = %v, %v; want false, ErrNotObtained", ok, err)
	}
	if !paused {
		t.Fatal("the hook never fired at HookAcquiredQuorum")
	}
	t.Logf("refused: %v", err)
}

func TestLockGivesUp(t *testing.T) {
	ctx := locktest.Context(t)
	cs := clientsFor(t, addrs)
	key := newKey(t)
	holder := redlock.New(cs, key)
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	defer holder.Unlock(context.Background())
	fast := redlock.WithRetry(func(int) time.Duration { return time.Millisecond })

	t.Run("tries exhausted", func(t *testing.T) {
		// An attempt refused everywhere releases nothing (take.lua said
		// the key was someone else's), so count the scripts to node 0:
		// one per attempt.
		var rounds atomic.Int32
		counted := clientsFor(t, addrs)
		rig.OnCommand(counted[0].(*redis.Client), func(name string) {
			if name == "evalsha" || name == "eval" || name == "set" {
				rounds.Add(1)
			}
		})
		err := redlock.New(counted, key, fast, redlock.WithTries(3)).Lock(ctx)
		if !errors.Is(err, redlock.ErrNotObtained) || errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Lock() = %v; want ErrNotObtained without a context error", err)
		}
		if rounds.Load() != 3 {
			t.Errorf("Lock() sent %d acquisitions to node 0; want 3: 3 attempts", rounds.Load())
		}
	})
	t.Run("context deadline", func(t *testing.T) {
		short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		err := redlock.New(cs, key, fast, redlock.WithTries(1<<30)).Lock(short)
		if !errors.Is(err, redlock.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Lock() = %v; want ErrNotObtained joined with DeadlineExceeded", err)
		}
	})
	t.Run("context already cancelled", func(t *testing.T) {
		done, cancel := context.WithCancel(ctx)
		cancel()
		err := redlock.New(cs, newKey(t)).Lock(done)
		if !errors.Is(err, redlock.ErrNotObtained) || !errors.Is(err, context.Canceled) {
			t.Errorf("Lock() = %v; want ErrNotObtained joined with Canceled", err)
		}
	})
}

func TestUnlockReleasesEvenWithCancelledContext(t *testing.T) {
	key := newKey(t)
	ctx, cancel := context.WithCancel(t.Context())
	m := redlock.New(clientsFor(t, addrs), key)
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := m.Unlock(ctx); err != nil {
		t.Fatalf("Unlock(cancelled ctx) = %v; want nil", err)
	}
	settle(t, m) // Unlock returned at a majority; the rest land now
	if got := holders(t, admin, key); !slices.Equal(got, make([]string, len(admin))) {
		t.Errorf("after Unlock, nodes hold %q; want the key gone everywhere", got)
	}
}

// TestMutualExclusion runs clients that contend for one lock on 5 nodes and
// checks that no two are ever inside the critical section together.
func TestMutualExclusion(t *testing.T) {
	ctx := locktest.Context(t)
	key := newKey(t)
	cs := clientsFor(t, addrs)
	const clients, rounds = 4, 10
	retry := redlock.WithRetry(func(int) time.Duration { return time.Duration(1+rand.IntN(5)) * time.Millisecond })
	var locks []locktest.Locker
	for range clients {
		locks = append(locks, redlock.New(cs, key, retry, redlock.WithTries(1<<30), redlock.WithTTL(10*time.Second)))
	}
	peak, total, err := locktest.Turns(ctx, locks, rounds, time.Millisecond) // each holds the lock for a moment
	if err != nil {
		t.Fatal(err)
	}
	if peak != 1 || total != clients*rounds {
		t.Errorf("%d critical sections, at most %d at once; want %d, at most 1", total, peak, clients*rounds)
	}
}

func TestHookPoints(t *testing.T) {
	ctx := locktest.Context(t)
	var mu sync.Mutex
	var points []string
	hook := func(_ context.Context, p string) {
		mu.Lock()
		defer mu.Unlock()
		points = append(points, p)
	}
	m := redlock.New(clientsFor(t, addrs), newKey(t), redlock.WithHook(hook))
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{redlock.HookAcquiredQuorum, redlock.HookBeforeRelease}
	if !slices.Equal(points, want) {
		t.Errorf("hook points = %q; want %q", points, want)
	}
}

func TestValidity(t *testing.T) {
	tests := []struct {
		name         string
		ttl, elapsed time.Duration
		want         time.Duration
	}{
		{"default ttl, instant", 8 * time.Second, 0, 8*time.Second - 82*time.Millisecond},
		{"default ttl, 3ms round", 8 * time.Second, 3 * time.Millisecond, 7915 * time.Millisecond},
		{"10s ttl, 100ms round", 10 * time.Second, 100 * time.Millisecond, 9798 * time.Millisecond},
		{"100ms ttl, exactly used up", 100 * time.Millisecond, 97 * time.Millisecond, 0},
		{"100ms ttl, overrun", 100 * time.Millisecond, 150 * time.Millisecond, -53 * time.Millisecond},
		{"1ms ttl", time.Millisecond, 0, -1*time.Millisecond - 10*time.Microsecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := redlock.Validity(tt.ttl, tt.elapsed); got != tt.want {
				t.Errorf("Validity(%v, %v) = %v; want %v", tt.ttl, tt.elapsed, got, tt.want)
			}
		})
	}
}

func TestDefaultNodeTimeout(t *testing.T) {
	tests := []struct{ ttl, want time.Duration }{
		{8 * time.Second, 400 * time.Millisecond},
		{time.Minute, 3 * time.Second},
		{time.Second, 50 * time.Millisecond},
		{60 * time.Millisecond, 30 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := redlock.DefaultNodeTimeout(tt.ttl); got != tt.want {
			t.Errorf("DefaultNodeTimeout(%v) = %v; want %v", tt.ttl, got, tt.want)
		}
	}
}

// TestScriptsUseTheChannelPrefix: the scripts that hand the lock over
// publish on the channels the Notifier listens on.
func TestScriptsUseTheChannelPrefix(t *testing.T) {
	for _, name := range []string{"release", "acquire"} {
		if !strings.Contains(redlock.ScriptSources[name], `"`+redlock.ChannelPrefix+`"`) {
			t.Errorf("%s.lua does not publish on %q", name, redlock.ChannelPrefix)
		}
	}
}

// TestScriptsLoad loads every script into a real server and checks that
// the server computes the same SHA1 that EVALSHA will send.
func TestScriptsLoad(t *testing.T) { locktest.ScriptsLoad(t, admin[0], redlock.Scripts) }

// TestObserver sees what a Mutex reports: an acquisition with its wait, a
// release with its hold time, and a give-up with its cause.
func TestObserver(t *testing.T) {
	ctx := t.Context()
	rec := observetest.New()
	obs := redlock.WithObserver(rec.Observe)
	key := observerKey.Add(1)
	k := fmt.Sprintf("redlock-observer-test:%d", key)
	a := redlock.New(testClients(), k, obs)
	b := redlock.New(testClients(), k, obs, redlock.WithTries(1))
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Lock(ctx); !errors.Is(err, redlock.ErrNotObtained) {
		t.Fatalf("B.Lock = %v; want ErrNotObtained", err)
	}
	// A TryLock that finds the lock taken is not a give-up: no event.
	if ok, err := b.TryLock(ctx); ok || err != nil {
		t.Fatalf("B.TryLock = %v, %v; want false, nil", ok, err)
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	settle(t, a)
	if ok, err := b.TryLock(ctx); !ok || err != nil {
		t.Fatalf("B.TryLock after A's Unlock = %v, %v; want true, nil", ok, err)
	}
	if err := b.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	settle(t, b)
	rec.Expect(t, "all", "redlock", k, "acquired gave-up released acquired released")
}

var observerKey atomic.Int64

func testClients() []redlock.Client {
	cs := make([]redlock.Client, len(admin))
	for i, c := range admin {
		cs[i] = c
	}
	return cs
}

// orderLog is a Client that records when each command to its node starts
// and ends: "set>", "set<", "script>", "script<".
type orderLog struct {
	*redis.Client
	mu  sync.Mutex
	log []string
}

func (o *orderLog) add(s string) {
	o.mu.Lock()
	o.log = append(o.log, s)
	o.mu.Unlock()
}

func (o *orderLog) entries() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.log)
}

func (o *orderLog) SetArgs(ctx context.Context, key string, value any, a redis.SetArgs) *redis.StatusCmd {
	o.add("set>")
	defer o.add("set<")
	return o.Client.SetArgs(ctx, key, value, a)
}

func (o *orderLog) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	if sha == redlock.Scripts["take"].Hash() { // the acquisition: SET NX PX as a script
		o.add("set>")
		defer o.add("set<")
	} else if !isProbe(args) {
		o.add("script>")
		defer o.add("script<")
	}
	return o.Client.EvalSha(ctx, sha, keys, args...)
}

func (o *orderLog) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	if script == redlock.ScriptSources["take"] {
		o.add("set>")
		defer o.add("set<")
	} else if !isProbe(args) {
		o.add("script>")
		defer o.add("script<")
	}
	return o.Client.Eval(ctx, script, keys, args...)
}

// isProbe reports whether a script's arguments are the preflight check's
// (a release of a token nobody holds, which reads and changes nothing).
func isProbe(args []any) bool { return len(args) > 0 && args[0] == "preflight-probe" }

// TestCommandsReachEachNodeInOrder freezes one node, so the SET sent
// there stays in flight: Lock returns on the other four, and so does the
// Unlock that follows, which must not send its release to the frozen node
// until that SET has ended, or the SET could land after the release and
// leave a key behind. The node is resumed only once Unlock has returned:
// by then a release sent out of order would already be logged.
func TestCommandsReachEachNodeInOrder(t *testing.T) {
	ctx := locktest.Context(t)
	nodes, cs, adm := firstFrozen(t)
	slow := &orderLog{Client: adm[0]}
	cs[0] = slow
	m := redlock.New(cs, "lock:order", redlock.WithTTL(30*time.Second), redlock.WithNodeTimeout(10*time.Second))
	if err := m.Lock(ctx); err != nil {
		t.Fatalf("Lock() with node 0 frozen = %v; want nil", err)
	}
	// Lock may return on the four live nodes before the SET to node 0 has
	// even started; wait until it has (it cannot end while node 0 is frozen).
	eventually(t, "the SET to node 0 in flight", func() (bool, string) {
		got := slow.entries()
		return slices.Equal(got, []string{"set>"}), fmt.Sprintf("node 0 saw %q", got)
	})
	if err := m.Unlock(ctx); err != nil {
		t.Fatalf("Unlock() with node 0 frozen = %v; want nil", err)
	}
	waitHolders(t, adm[1:], "lock:order", make([]string, 4))
	if got := slow.entries(); !slices.Equal(got, []string{"set>"}) {
		t.Errorf("node 0 while its SET is in flight: %q; want the release held back", got)
	}
	if err := nodes[0].Resume(); err != nil {
		t.Fatal(err)
	}
	settle(t, m)
	// The SET (take.lua) and the release are each EVALSHA, then EVAL on a
	// server that has not loaded the script yet: one or two calls each,
	// the release's all after the SET ended.
	got := slow.entries()
	rest := got
	for len(rest) >= 2 && rest[0] == "set>" && rest[1] == "set<" {
		rest = rest[2:]
	}
	if len(rest) == len(got) || len(got)-len(rest) > 4 || len(rest) < 2 || rest[0] != "script>" || slices.Contains(rest, "set>") {
		t.Errorf("node 0 saw %q; want the SET to end before the release starts", got)
	}
	waitHolders(t, adm, "lock:order", make([]string, 5))
}

// TestSettleGivesUpWithItsContext: Settle on a Mutex whose SET is stuck on
// a frozen node returns ctx's error when ctx ends, and returns at once on
// a Mutex that has sent nothing.
func TestSettleGivesUpWithItsContext(t *testing.T) {
	ctx := locktest.Context(t)
	if err := redlock.New(clientsFor(t, addrs), newKey(t)).Settle(ctx); err != nil {
		t.Fatalf("Settle() on a new Mutex = %v; want nil", err)
	}
	nodes, cs, _ := firstFrozen(t)
	m := redlock.New(cs, "lock:settle", redlock.WithTTL(30*time.Second), redlock.WithNodeTimeout(10*time.Second))
	if err := m.Lock(ctx); err != nil {
		t.Fatalf("Lock() with node 0 frozen = %v; want nil", err)
	}
	short, cancel := context.WithCancel(ctx)
	cancel()
	if err := m.Settle(short); !errors.Is(err, context.Canceled) {
		t.Fatalf("Settle() with the SET to node 0 in flight and ctx cancelled = %v; want context.Canceled", err)
	}
	if err := nodes[0].Resume(); err != nil {
		t.Fatal(err)
	}
	settle(t, m)
	if err := m.Unlock(ctx); err != nil {
		t.Fatalf("Unlock() = %v; want nil", err)
	}
	settle(t, m)
}
