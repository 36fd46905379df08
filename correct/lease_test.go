package correct_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/correct"
	"github.com/locklab/locklab/internal/locktest"
)

// TestLockNeverReturnsAnOverLease (issue 34): a Lock whose round trips are
// slow next to its TTL must not return a lease that is over, or about to
// be. The lease counts from just before the SET (or, for a hand-off, the
// last moment known to precede it) was sent; when Lock returns nil, at
// least half the TTL must be left of it, and Redis must still hold the key
// for us, so that a third client on a clean link is refused. When no such
// lease can be had (the round trip alone takes more than half the TTL),
// Lock must keep trying until its context ends, and leave no key behind:
// the third client then gets the lock at once.
//
// The cases: the waiter, handed the lock while its Notifier's
// connection takes 700ms each way (TTL 400ms); the same waiter with its
// Mutex's connection slow too (150ms each way: a hand-off found with less
// than half the TTL left; 700ms: none at all); and an uncontended Lock
// over a 700ms link, with and without a Notifier, whose SET lands long
// after the lease it counts from has run out.
func TestLockNeverReturnsAnOverLease(t *testing.T) {
	const (
		ttl  = 400 * time.Millisecond
		wait = 5 * time.Second // Lock's budget: several slow tries
	)
	cases := []struct {
		name          string
		notifier      bool
		handoff       bool
		mutexDelay    time.Duration // each way, on the Mutex's connection
		notifierDelay time.Duration // each way, on the Notifier's connection
		mayNeverLock  bool          // no lease with half the TTL left can be had
	}{
		{name: "handoff/notifier-700ms", notifier: true, handoff: true, notifierDelay: 700 * time.Millisecond},
		{name: "handoff/notifier-700ms-mutex-150ms", notifier: true, handoff: true, mutexDelay: 150 * time.Millisecond, notifierDelay: 700 * time.Millisecond, mayNeverLock: true},
		{name: "handoff/both-700ms", notifier: true, handoff: true, mutexDelay: 700 * time.Millisecond, notifierDelay: 700 * time.Millisecond, mayNeverLock: true},
		{name: "uncontended/notifier/700ms", notifier: true, mutexDelay: 700 * time.Millisecond, notifierDelay: 700 * time.Millisecond, mayNeverLock: true},
		{name: "uncontended/poll/700ms", mutexDelay: 700 * time.Millisecond, mayNeverLock: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			key := newKey(t)
			clean := newClient(t)

			// The waiter's process: its Mutex's client and its Notifier's,
			// each behind its own proxy. Both are warmed on a clean link
			// first (the server check and the scripts' load), so that the
			// slow link times only the lock's own commands.
			mp, mc := locktest.ThroughProxy(t, redisAddr)
			opts := []correct.Option{correct.WithTTL(ttl)}
			if tc.notifier {
				np, nc := locktest.ThroughProxy(t, redisAddr)
				n := notifierOn(t, nc)
				opts = append(opts, correct.WithNotifier(n))
				locktest.Warm(t, ctx, correct.New(mc, key, opts...))
				np.SetLatency(tc.notifierDelay)
			} else {
				locktest.Warm(t, ctx, correct.New(mc, key, opts...))
			}

			lockCtx, cancel := context.WithTimeout(ctx, wait)
			defer cancel()
			var w *correct.Mutex
			var got <-chan error
			if tc.handoff {
				holder := correct.New(clean, key, correct.WithNotifier(notifierOn(t, newClient(t))), correct.WithTTL(time.Minute))
				if err := holder.Lock(ctx); err != nil {
					t.Fatal(err)
				}
				mp.SetLatency(tc.mutexDelay)
				w, got = queueWaiter(t, lockCtx, mc, key, opts...)
				if err := holder.Unlock(ctx); err != nil {
					t.Fatal(err)
				}
			} else {
				mp.SetLatency(tc.mutexDelay)
				w = correct.New(mc, key, opts...)
				ch := make(chan error, 1)
				ch <- w.Lock(lockCtx)
				got = ch
			}
			err := <-got
			returned := time.Now()
			left := w.Until().Sub(returned)
			pttl, pttlErr := clean.PTTL(ctx, key).Result()
			third := correct.New(clean, key, correct.WithTTL(time.Minute))
			thirdGot, thirdErr := third.TryLock(ctx)
			if thirdGot {
				defer func() { _ = third.Unlock(context.Background()) }()
			}
			switch {
			case err == nil:
				defer func() {
					mp.SetLatency(0)
					_ = w.Unlock(context.Background())
				}()
				if left < ttl/2 {
					t.Errorf("Lock = nil with Until %v from its return (PTTL %v, %v); want at least half the %v TTL left", left.Round(time.Millisecond), pttl, pttlErr, ttl)
				}
				if pttl <= 0 || pttlErr != nil {
					t.Errorf("Lock = nil, then PTTL %s = %v, %v; want the key held", key, pttl, pttlErr)
				}
				if thirdGot || thirdErr != nil {
					t.Errorf("a third client's TryLock after Lock = nil: %v, %v; want false, nil", thirdGot, thirdErr)
				}
			case !tc.mayNeverLock:
				t.Fatalf("Lock = %v; want nil: the Mutex's link is clean", err)
			case !errors.Is(err, correct.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded):
				t.Fatalf("Lock = %v; want ErrNotObtained joined with the deadline", err)
			case !tc.handoff && !strings.Contains(err.Error(), "less than half"):
				// (A waiter queued over the slow link may first be handed
				// the lock as its deadline comes, and then says only that.)
				t.Errorf("Lock = %v; want it to say why it never got the lock (an answer that left less than half the TTL)", err)
			case !thirdGot || thirdErr != nil:
				t.Errorf("a third client's TryLock after the Lock gave up: %v, %v (PTTL %v); want true: no key left behind", thirdGot, thirdErr, pttl)
			}
		})
	}
}
