package contract_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/locklab/locklab/internal/faultproxy"
)

// The lease scenarios (issue 34): a Lock that returns nil returns a lease
// that is not over. Over a link whose round trip is close to the TTL, or
// longer, a lock that counts its lease from the moment its command was
// sent (as every kind here does, rightly) learns it holds the key when
// most or all of the lease is gone; returning nil then hands the caller a
// lock that Redis has dropped, or is about to, while another client takes
// the key. So when Lock returns nil:
//
//   - Until(), for the kinds that have it, is in the future by at least the
//     margin the kind's doc promises (leaseMargin);
//   - Done(), for the kinds that have it, is open;
//   - the key's PTTL, read back from Redis right after (on a majority of
//     the nodes), is positive.
//
// And when no such lease can be had, Lock gives up with the kind's
// ErrNotObtained when its context ends, leaving no key behind: a client on
// a clean link then takes the lock at once.

// leaseTTL is the slow party's TTL in the lease scenarios.
const leaseTTL = 400 * time.Millisecond

// leaseBudget is how long the slow party's Lock may try: several of the
// slowest round trips.
const leaseBudget = 5 * time.Second

// slowLinks are the latencies, each way, of the slow party's link: an
// answer that comes with a tenth of the lease left, and one that comes
// after the whole lease.
var slowLinks = []time.Duration{180 * time.Millisecond, 700 * time.Millisecond}

// leaseMargin is what each kind's doc promises is left of the lease, at
// least, when Lock returns nil: correct, half the TTL (Mutex.Lock);
// redlock, a positive validity, ttl − elapsed − drift > 0 (its Until
// already leaves the drift out); watchdog and fencing, half the TTL, as
// correct; reentrant has no Until, and is checked on the key's PTTL alone.
// A kind missing here fails the test: adding a kind means stating its
// margin.
func leaseMargin(t *testing.T, k kind, ttl time.Duration) time.Duration {
	t.Helper()
	switch k.baseName() {
	case "correct", "correct+notifier", "watchdog", "fencing":
		return ttl / 2
	case "redlock", "redlock+notifier":
		return 0
	case "reentrant":
		return 0 // no Until; PTTL only
	}
	t.Fatalf("%s: no lease margin stated in lease_test.go", k.name)
	return 0
}

// TestLockReturnsALeaseThatIsNotOver runs, for every kind, a Lock over a
// slow link with nobody else holding the lock and, for the queued kinds,
// a waiter on a slow link handed the lock by a holder on a clean one.
func TestLockReturnsALeaseThatIsNotOver(t *testing.T) {
	forKinds(t, anyKind, func(t *testing.T, k kind) {
		t.Parallel()
		margin := leaseMargin(t, k, leaseTTL)
		for _, d := range slowLinks {
			t.Run(fmt.Sprintf("uncontended/%v", d), func(t *testing.T) {
				t.Parallel()
				ctx, key, p, ps := slowParty(t, k)
				setLatency(ps, d)
				lockCtx, cancel := context.WithTimeout(ctx, leaseBudget)
				defer cancel()
				err := p.lock.Lock(lockCtx)
				checkLease(t, ctx, k, key, p, ps, err, time.Now(), margin)
			})
			if !k.queued {
				continue
			}
			t.Run(fmt.Sprintf("handoff/%v", d), func(t *testing.T) {
				t.Parallel()
				ctx, key, p, ps := slowParty(t, k)
				holder := newParty(t, k, "holder", key, longTTL, user, nil)
				mustLock(t, ctx, holder)
				lockCtx, cancel := context.WithTimeout(ctx, leaseBudget)
				defer cancel()
				got := queueUp(t, lockCtx, p) // on a clean link
				setLatency(ps, d)
				mustUnlock(t, ctx, holder)
				err := <-got
				checkLease(t, ctx, k, key, p, ps, err, time.Now(), margin)
			})
		}
	})
}

// slowParty makes the party under test, "slow", with TTL leaseTTL, its
// clients (and Notifier) behind proxies with no latency yet, warmed with a
// Lock and Unlock so that the server checks and the scripts' loading are
// done before the link slows.
func slowParty(t *testing.T, k kind) (context.Context, string, *party, []*faultproxy.Proxy) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	key := newKey(t, k)
	ps := proxiesFor(t, k)
	p := newParty(t, k, "slow", key, leaseTTL, user, ps)
	mustLock(t, ctx, p)
	mustUnlock(t, ctx, p)
	settle(ctx, p.lock)
	return ctx, key, p, ps
}

func setLatency(ps []*faultproxy.Proxy, d time.Duration) {
	for _, p := range ps {
		p.SetLatency(d)
	}
}

// checkLease judges the result err of p's Lock, returned at returned: a
// lease with at least margin left (Until), Done open, PTTL positive on a
// majority of the nodes, and another client refused; or ErrNotObtained,
// with no key left behind, so that a client on a clean link takes the lock
// at once.
func checkLease(t *testing.T, ctx context.Context, k kind, key string, p *party, ps []*faultproxy.Proxy, err error, returned time.Time, margin time.Duration) {
	t.Helper()
	var until time.Time
	if u, ok := p.lock.(interface{ Until() time.Time }); ok {
		until = u.Until()
	}
	done := false
	if d, ok := p.lock.(interface{ Done() <-chan struct{} }); ok {
		select {
		case <-d.Done():
			done = true
		default:
		}
	}
	live := 0
	var pttls []time.Duration
	for _, c := range admins(t, k) {
		pttl := c.PTTL(ctx, key).Val()
		pttls = append(pttls, pttl)
		if pttl > 0 {
			live++
		}
	}
	if err != nil {
		if !errors.Is(err, k.errNotObtained) {
			t.Fatalf("%s: Lock over a slow link = %v; want nil or ErrNotObtained", k.name, err)
		}
		t.Logf("%s: Lock = %v", k.name, err)
		settle(ctx, p.lock)
		other := newParty(t, k, "other", key, longTTL, user, nil)
		got, terr := other.lock.TryLock(ctx)
		if got {
			mustUnlock(t, ctx, other)
		}
		settle(ctx, other.lock) // redlock returns at a majority
		if !got || terr != nil {
			t.Errorf("%s: after the slow Lock gave up (%v), a clean client's TryLock = %v, %v (PTTL %v); want true: no key left behind\n%s",
				k.name, err, got, terr, pttls, dump(k, key))
		}
		// A command of the slow party still in the network when its Lock
		// gave up (redlock's per-node timeout is shorter than the link)
		// may land later; whatever it writes must expire within its TTL.
		checkNoTrace(t, k, key)
		return
	}
	defer func() {
		setLatency(ps, 0)
		_ = p.lock.Unlock(context.WithoutCancel(ctx))
		settle(ctx, p.lock)
		checkNoTrace(t, k, key)
	}()
	if !until.IsZero() {
		if left := until.Sub(returned); left <= 0 || left < margin {
			t.Errorf("%s: Lock = nil with Until %v from its return; want at least %v (the %v lease counts from the send, its answer came late)",
				k.name, left.Round(time.Millisecond), margin, leaseTTL)
		}
	}
	if done {
		t.Errorf("%s: Lock = nil with Done already closed", k.name)
	}
	if live < k.nodes/2+1 {
		t.Errorf("%s: Lock = nil, then PTTL %s = %v on the nodes; want positive on a majority: the lease is over in Redis", k.name, key, pttls)
	}
	other := newParty(t, k, "other", key, longTTL, user, nil)
	got, terr := other.lock.TryLock(ctx)
	if got {
		mustUnlock(t, ctx, other)
	}
	settle(ctx, other.lock) // redlock returns at a majority
	if got || terr != nil {
		t.Errorf("%s: after the slow Lock returned nil, a clean client's TryLock = %v, %v; want false, nil", k.name, got, terr)
	}
}
