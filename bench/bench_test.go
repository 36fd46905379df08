package main

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locklab/locklab/bench/env"
	"github.com/locklab/locklab/bench/registry"
	"github.com/locklab/locklab/bench/speed"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// benchParallelism is b.SetParallelism for the contended benchmarks: with
// GOMAXPROCS 2 that is 8 contending clients.
const benchParallelism = 4

// benchLockTimeout bounds each Lock call of a contended benchmark. A lock
// may wait for a wake-up that never comes (rueidislock waits for a
// client-side-caching invalidation with no timer, and under RunParallel
// some of its waiters were seen to wait for good), and RunParallel would
// then never return. Such a call is reported in the lock-timeouts metric.
const benchLockTimeout = 5 * time.Second

// BenchmarkLock measures every safe implementation uncontended (acquire +
// release pairs on fresh keys, one client) and contended (clients from
// b.RunParallel on one key, hold 0), in the format benchstat reads:
//
//	go test -run '^$' -bench . -count 6 ./bench/ > new.txt
//	benchstat -col /impl new.txt
//
// Besides ns/op (per pair or per acquisition) it reports the acquire
// latency's p50-ns and p99-ns and acquires/s. The figures to quote are
// `go run ./bench`'s, which measure the wait across give-ups and fairness;
// these are for comparing one change against another.
func BenchmarkLock(b *testing.B) {
	for _, kind := range registry.Default() {
		for _, contention := range []bool{false, true} {
			name := "impl=" + kind + "/contention=none"
			if contention {
				name = "impl=" + kind + "/contention=parallel"
			}
			b.Run(name, func(b *testing.B) { benchmarkLock(b, kind, contention) })
		}
	}
}

var benchSeq atomic.Int64

func benchmarkLock(b *testing.B, kind string, contention bool) {
	im := registry.Locks[kind]
	ctx := b.Context()
	e := registry.Env{Addrs: addrs, TTL: speed.DefaultTTL, Servers: &env.Others}
	tag := env.KeyRoot + "gobench:" + env.RandomID() + ":" + strconv.FormatInt(benchSeq.Add(1), 10)
	srv, err := env.StartServers(ctx, addrs, im.Nodes)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	defer func() { _, _ = srv.Sweep(context.Background(), tag+"*") }()

	n := 1
	if contention {
		n = benchParallelism * parallelProcs()
	}
	cons := make([]registry.Contender, n)
	for i := range cons {
		if cons[i], err = im.Connect(e); err != nil {
			b.Fatal(err)
		}
		defer cons[i].Close()
		l := cons[i].Locker(tag + ":warm")
		if err := l.Lock(ctx); err != nil {
			b.Fatal(err)
		}
		if err := l.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
	}

	total := speed.NewHist()
	var failures, timeouts atomic.Int64
	var lastErr atomic.Value
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	if !contention {
		for i := range b.N {
			l := cons[0].Locker(tag + ":" + strconv.Itoa(i))
			t0 := time.Now()
			if err := l.Lock(ctx); err != nil {
				b.Fatal(err)
			}
			speed.Record(total, time.Since(t0))
			if err := l.Unlock(ctx); err != nil {
				b.Fatal(err)
			}
		}
	} else {
		var mu sync.Mutex
		var next atomic.Int64
		b.SetParallelism(benchParallelism)
		b.RunParallel(func(pb *testing.PB) {
			l := cons[int(next.Add(1)-1)%len(cons)].Locker(tag + ":contended")
			h := speed.NewHist()
			defer func() {
				mu.Lock()
				total.Merge(h)
				mu.Unlock()
			}()
			for pb.Next() {
				// The lock context lives until after Unlock: watchdog and
				// rueidislock tie the hold to it.
				lctx, cancel := context.WithTimeout(ctx, benchLockTimeout)
				t0 := time.Now()
				if err := l.Lock(lctx); err != nil {
					if lctx.Err() != nil && ctx.Err() == nil {
						timeouts.Add(1)
					} else {
						failures.Add(1)
						lastErr.Store(fmt.Errorf("Lock: %w", err))
					}
					cancel()
					continue
				}
				speed.Record(h, time.Since(t0))
				if err := l.Unlock(ctx); err != nil {
					failures.Add(1)
					lastErr.Store(fmt.Errorf("Unlock: %w", err))
				}
				cancel()
			}
		})
	}
	elapsed := time.Since(start)
	b.StopTimer()
	if f := failures.Load(); f > 0 {
		b.Errorf("%d failed calls, last: %v", f, lastErr.Load())
	}
	reportLatency(b, total, elapsed)
	if contention {
		b.ReportMetric(float64(timeouts.Load()), "lock-timeouts")
	}
}

func reportLatency(b *testing.B, h *hdrhistogram.Histogram, elapsed time.Duration) {
	b.ReportMetric(float64(h.ValueAtQuantile(50))*1e3, "p50-ns")
	b.ReportMetric(float64(h.ValueAtQuantile(99))*1e3, "p99-ns")
	if elapsed > 0 {
		b.ReportMetric(float64(h.TotalCount())/elapsed.Seconds(), "acquires/s")
	}
}

// parallelProcs is GOMAXPROCS, the factor RunParallel multiplies
// benchParallelism by.
func parallelProcs() int { return runtime.GOMAXPROCS(0) }
