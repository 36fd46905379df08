package contract_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
)

// crowd is the size of TestThousandWaiters' crowd: 1000, or
// LOCKLAB_CROWD.
func crowd() int {
	n := 1000
	if v := os.Getenv("LOCKLAB_CROWD"); v != "" {
		_, _ = fmt.Sscan(v, &n)
	}
	return n
}

// crowdTTL is the waiters' TTL: 8s (the bench's), or LOCKLAB_CROWD_TTL. A
// shorter one loads the servers more with the waiters' own periodic looks
// at the lock (every ttl/4, further back less often) and gives redlock a
// shorter per-node timeout (5% of the TTL): with 1s, under -race on a
// loaded 2-core machine, rounds timed out (50ms) and the crowd split; with
// 4s, a burst of 1000 Locks at once kept a holder's Unlock past its 200ms
// per-node timeout for the whole 2s it retries, once, in a fresh-clone CI
// at load 8 (redlock). 1s is the stress setting (LOCKLAB_CROWD_TTL=1s).
func crowdTTL() time.Duration {
	d := 8 * time.Second
	if v := os.Getenv("LOCKLAB_CROWD_TTL"); v != "" {
		d, _ = time.ParseDuration(v)
	}
	return d
}

// crowdOn locks a fresh key for k with a holder H, and returns it with a
// maker of waiters on the key: waiter i is W<i>, a party of process i%10
// (ten processes, each with its own clients and Notifier) with a lease of
// crowdTTL.
func crowdOn(t *testing.T, ctx context.Context, k kind) (holder *party, waiter func(i int) *party) {
	t.Helper()
	key := newKey(t, k)
	holder = newParty(t, k, "H", key, longTTL, strict, nil)
	if err := holder.lock.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	const processes = 10
	var procs []func(string) *party
	for range processes {
		procs = append(procs, sharedParties(t, k, key, crowdTTL()))
	}
	return holder, func(i int) *party { return procs[i%processes](fmt.Sprint("W", i)) }
}

// TestThousandWaiters: a crowd waits for one key, spread over ten
// processes (ten parties, each with its own clients and Notifier), while
// one holder keeps the lock until they have all queued. Every waiter must
// be served, in the order it queued, and none twice at once. The time each
// kind takes is logged: the figures behind "at most 3x the time correct
// takes" (go test -run TestThousandWaiters -v ./internal/contract).
func TestThousandWaiters(t *testing.T) {
	n := crowd()
	forQueued(t, func(t *testing.T, k kind) {
		ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
		defer cancel()
		holder, waiter := crowdOn(t, ctx, k)
		var (
			mu       sync.Mutex
			order    []int // waiters in the order they got the lock
			inside   atomic.Int32
			overlaps atomic.Int32
		)
		g, gctx := errgroup.WithContext(ctx)
		for i := range n {
			w := waiter(i)
			got := make(chan error, 1)
			go func() { got <- w.lock.Lock(gctx) }()
			select { // queue one by one: the order is known
			case <-w.queued:
			case err := <-got:
				t.Fatalf("W%d's Lock returned %v before it queued", i, err)
			case <-gctx.Done():
				t.Fatalf("W%d did not queue", i)
			}
			g.Go(func() error {
				if err := <-got; err != nil {
					return fmt.Errorf("W%d's Lock = %w", i, err)
				}
				if inside.Add(1) != 1 {
					overlaps.Add(1)
				}
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				inside.Add(-1)
				return w.lock.Unlock(gctx)
			})
		}
		start := time.Now()
		if err := holder.lock.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := g.Wait(); err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		t.Logf("%s: %d waiters served in %v (%v per hand-off)", k.name, n, took.Round(time.Millisecond), (took / time.Duration(n)).Round(time.Microsecond))
		if overlaps.Load() != 0 {
			t.Errorf("%d overlaps", overlaps.Load())
		}
		for i, w := range order {
			if w != i {
				t.Errorf("waiter %d was served %d-th; want first come, first served", w, i)
				break
			}
		}
	})
}

// TestThousandWaitersAtOnce: the same crowd, but every waiter calls Lock at
// the same moment, as a burst of requests does: they race for the queues,
// and then must all be served, none twice at once.
func TestThousandWaitersAtOnce(t *testing.T) {
	n := crowd()
	forQueued(t, func(t *testing.T, k kind) {
		ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
		defer cancel()
		holder, waiter := crowdOn(t, ctx, k)
		var began0 time.Time
		var inside, overlaps, served atomic.Int32
		var gapMu sync.Mutex
		var times []time.Duration
		g, gctx := errgroup.WithContext(ctx)
		start := make(chan struct{})
		for i := range n {
			w := waiter(i)
			g.Go(func() error {
				<-start
				if err := w.lock.Lock(gctx); err != nil {
					return fmt.Errorf("W%d's Lock = %w", i, err)
				}
				if inside.Add(1) != 1 {
					overlaps.Add(1)
				}
				served.Add(1)
				gapMu.Lock()
				times = append(times, time.Since(began0))
				gapMu.Unlock()
				inside.Add(-1)
				return w.lock.Unlock(gctx)
			})
		}
		began0 = time.Now()
		began := began0
		close(start)
		if err := holder.lock.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		err := g.Wait()
		took := time.Since(began)
		t.Logf("%s: %d of %d waiters who came at once served in %v", k.name, served.Load(), n, took.Round(time.Millisecond))
		if os.Getenv("LOCKLAB_CROWD_GAPS") != "" {
			var prev time.Duration
			for i, at := range times {
				if at-prev > 100*time.Millisecond {
					t.Logf("gap of %v before acquisition %d (at %v)", at-prev, i, at)
				}
				prev = at
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		if overlaps.Load() != 0 {
			t.Errorf("%d overlaps", overlaps.Load())
		}
	})
}
