package etcdlock_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"golang.org/x/sync/errgroup"

	"github.com/locklab/locklab/etcdlock"
	"github.com/locklab/locklab/internal/faultproxy"
)

// doneTrials is how many trials TestDoneBeforeOtherHolder runs: 3, or
// LOCKLAB_DONE_TRIALS (issue 34's measurement takes 20).
func doneTrials(t *testing.T) int {
	n := 3
	if v := os.Getenv("LOCKLAB_DONE_TRIALS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("LOCKLAB_DONE_TRIALS=%q: want a count", v)
		}
	}
	return n
}

// cutPhase returns when trial i cuts a off, after a renewal reached etcd:
// 850-1490ms, after the renewal's answer is back (800ms) and before the
// next renewal (sent 1.67s after the last, TTL/3) reaches etcd. It is the
// worst moment: a has just heard from etcd, and etcd will hear no more.
func cutPhase(i int) time.Duration {
	return 850*time.Millisecond + time.Duration(i%5)*160*time.Millisecond
}

// TestDoneBeforeOtherHolder (issue 34): a holds with a 5s lease; its
// connection gets 800ms of latency each way (replies come 800ms after etcd
// renewed the lease), then is cut off (blackhole) just after a renewal's
// answer came back (cutPhase). b, on a clean connection, Locks and
// gets the lock once etcd ends a's lease. a's Done must have closed when
// b's Lock returns. Counting from when an answer arrives (clientv3's
// lessor, a Session) made Done close up to a reply's latency after etcd
// ended the lease.
//
// Measure with: LOCKLAB_DONE_TRIALS=20 go test -count=1 -run
// TestDoneBeforeOtherHolder -v ./etcdlock/
func TestDoneBeforeOtherHolder(t *testing.T) {
	t.Parallel() // its own proxies; about 8s a trial, four at a time
	t.Run("own lease", func(t *testing.T) { doneBeforeOtherHolder(t, false) })
	t.Run("shared session", func(t *testing.T) { doneBeforeOtherHolder(t, true) })
}

// doneBeforeOtherHolder runs the trials of TestDoneBeforeOtherHolder, with
// a's lock on a session of its own with session.
func doneBeforeOtherHolder(t *testing.T, session bool) {
	t.Parallel()
	const (
		ttl     = 5 * time.Second
		latency = 800 * time.Millisecond
	)
	n := doneTrials(t)
	type result struct {
		doneFirst bool
		lead      time.Duration // how long before b's Lock returned a's Done closed (negative: after)
	}
	results := make([]result, n)
	var g errgroup.Group
	g.SetLimit(4)
	for i := range n {
		phase := cutPhase(i)
		proxy := faultproxy.Start(t, endpoints[0])
		key := lockKey(t)
		ca := client(t, proxy.Addr())
		opts := []etcdlock.Option{etcdlock.WithTTL(ttl)}
		if session {
			s, err := concurrency.NewSession(ca, concurrency.WithTTL(int(ttl/time.Second)))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			opts = append(opts, etcdlock.WithSession(s))
		}
		a := etcdlock.New(ca, key, opts...)
		plain := client(t)
		b := etcdlock.New(plain, key, etcdlock.WithTTL(ttl))
		g.Go(func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
			defer cancel()
			if err := a.Lock(ctx); err != nil {
				return err
			}
			proxy.SetLatency(latency)
			resp, err := plain.Get(ctx, a.Claim())
			if err != nil {
				return err
			}
			lease := clientv3.LeaseID(resp.Kvs[0].Lease)
			// Wait for a renewal sent under the latency to reach etcd:
			// the lease's remaining TTL goes up.
			var last int64 = -1
			renewals := 0
			for renewals < 2 {
				r, err := plain.TimeToLive(ctx, lease)
				if err != nil {
					return err
				}
				if last >= 0 && r.TTL > last {
					renewals++
				}
				last = r.TTL
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(20 * time.Millisecond):
				}
			}
			time.Sleep(phase) // the moment of the cut in a's renewal cycle: the trial's variable
			proxy.Blackhole()
			doneAt := make(chan time.Time, 1)
			go func() {
				select {
				case <-a.Done():
					doneAt <- time.Now()
				case <-ctx.Done():
					doneAt <- time.Time{}
				}
			}()
			if err := b.Lock(ctx); err != nil {
				return err
			}
			gotAt := time.Now()
			res := result{}
			select {
			case <-a.Done():
				res.doneFirst = true
			default:
			}
			d := <-doneAt
			if !d.IsZero() {
				res.lead = gotAt.Sub(d)
			}
			results[i] = res
			proxy.Heal()
			proxy.SetLatency(0)
			_ = a.Unlock(context.Background()) // ErrNotHeld: its lease ended
			return b.Unlock(context.Background())
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	first := 0
	for i, r := range results {
		if r.doneFirst {
			first++
		}
		t.Logf("trial %d (cut %v after a renewal reached etcd): a's Done closed %v before b's Lock returned", i, cutPhase(i), r.lead.Round(time.Millisecond))
	}
	t.Logf("a's Done closed before b got the lock in %d of %d trials (reply latency %v, TTL %v)", first, n, latency, ttl)
	if first != n {
		t.Errorf("a's Done closed before b got the lock in %d of %d trials; want all", first, n)
	}
}
