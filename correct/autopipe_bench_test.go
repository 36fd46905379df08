package correct_test

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/correct"
)

// BenchmarkAutoPipelineKeys measures correct's client cost per acquisition
// on go-redis's AutoPipeliner (issue 38): 64 goroutines over 1024 keys,
// hold 0, each goroutine with its own Mutex per key (as the bench's
// workers keep them), Lock and Unlock on a cancellable context (as the
// bench's run context is). It is for profiling (-cpuprofile, -memprofile,
// allocs/op); the project's speed figures come from go run ./bench.
func BenchmarkAutoPipelineKeys(b *testing.B) {
	for _, bc := range []struct {
		name   string
		notify bool
	}{{"notifier", true}, {"poll", false}} {
		b.Run(bc.name, func(b *testing.B) {
			c := redis.NewClient(&redis.Options{Addr: redisAddr}) // go-redis's defaults
			defer c.Close()
			ap, err := c.AutoPipeline()
			if err != nil {
				b.Fatal(err)
			}
			defer ap.Close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			opts := []correct.Option{}
			if bc.notify {
				n, err := correct.NewNotifier(ctx, ap)
				if err != nil {
					b.Fatal(err)
				}
				defer n.Close()
				opts = append(opts, correct.WithNotifier(n))
			}
			const keys = 1024
			prefix := "bench-ap:" + bc.name + ":" + strconv.Itoa(int(benchSeq.Add(1))) + ":"
			var worker atomic.Int64
			b.SetParallelism(max(1, 64/maxProcs()))
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				seed := uint64(worker.Add(1))
				lockers := map[int]*correct.Mutex{}
				for pb.Next() {
					seed = seed*6364136223846793005 + 1442695040888963407
					k := int(seed>>33) % keys
					m, ok := lockers[k]
					if !ok {
						m = correct.New(ap, prefix+strconv.Itoa(k), opts...)
						lockers[k] = m
					}
					if err := m.Lock(ctx); err != nil {
						b.Error(err)
						return
					}
					if err := m.Unlock(ctx); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

var benchSeq atomic.Int64

func maxProcs() int { return runtime.GOMAXPROCS(0) }
