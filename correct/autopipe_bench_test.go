package correct_test

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/correct"
	"github.com/locklab/locklab/internal/keyslot"
	"github.com/locklab/locklab/internal/preflight"
	"github.com/locklab/locklab/internal/retry"
	"github.com/locklab/locklab/internal/token"
)

// BenchmarkAutoPipelineKeys measures correct's client cost per acquisition
// on go-redis's AutoPipeliner (issue 38): 64 goroutines over 1024 keys,
// hold 0, each goroutine with its own locker per key (as the bench's
// workers keep them), Lock and Unlock on a cancellable context (as the
// bench's run context is). Beside correct (polling, and with a Notifier)
// it runs the floor in the same process: a bare SET NX PX and a
// compare-and-delete that leaves a receipt (the bench's raw+receipt), on
// the AutoPipeliner as it is ("floor") and through preflight.Bound, the
// wrapper correct sends through ("floor-bound"). It is for profiling
// (-cpuprofile, -memprofile, allocs/op) and for the ratio to the floor in
// one run, with the CPU time per Lock+Unlock of this process (cpu-ns/op)
// and of the redis-server (srv-cpu-ns/op); the project's speed figures
// come from go run ./bench.
func BenchmarkAutoPipelineKeys(b *testing.B) {
	for _, bc := range []struct {
		name string
		lock func(ctx context.Context, ap *redis.AutoPipeliner, b *testing.B) func(key string) locker
	}{
		{"notifier", correctLocker(true)},
		{"poll", correctLocker(false)},
		{"floor", floorLocker(false)},
		{"floor-bound", floorLocker(true)},
	} {
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
			newLocker := bc.lock(ctx, ap, b)
			const keys = 1024
			prefix := "bench-ap:" + bc.name + ":" + strconv.Itoa(int(benchSeq.Add(1))) + ":"
			var worker atomic.Int64
			b.SetParallelism(max(1, 64/maxProcs()))
			b.ReportAllocs()
			cpu0, srv0 := processCPU(), serverCPU(b, c)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				seed := uint64(worker.Add(1))
				lockers := map[int]locker{}
				for pb.Next() {
					seed = seed*6364136223846793005 + 1442695040888963407
					k := int(seed>>33) % keys
					m, ok := lockers[k]
					if !ok {
						m = newLocker(prefix + strconv.Itoa(k))
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
			b.StopTimer()
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(serverCPU(b, c)-srv0)/float64(b.N), "srv-cpu-ns/op")
		})
	}
}

// serverCPU returns the CPU time the redis-server has used, user and
// system, as INFO cpu says (to the microsecond).
func serverCPU(b *testing.B, c *redis.Client) time.Duration {
	info, err := c.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total time.Duration
	for _, line := range strings.Split(info, "\n") {
		name, value, _ := strings.Cut(strings.TrimSpace(line), ":")
		if name == "used_cpu_sys" || name == "used_cpu_user" {
			sec, err := strconv.ParseFloat(value, 64)
			if err != nil {
				b.Fatalf("INFO cpu: %s: %v", line, err)
			}
			total += time.Duration(sec * float64(time.Second))
		}
	}
	return total
}

// processCPU returns the CPU time this process has used, user and system:
// per operation, the client's cost, which the machine's load does not
// inflate as it does the wall time per operation (the redis-server is
// another process).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type locker interface {
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
}

func correctLocker(notify bool) func(ctx context.Context, ap *redis.AutoPipeliner, b *testing.B) func(string) locker {
	return func(ctx context.Context, ap *redis.AutoPipeliner, b *testing.B) func(string) locker {
		opts := []correct.Option{}
		if notify {
			n, err := correct.NewNotifier(ctx, ap)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = n.Close() })
			opts = append(opts, correct.WithNotifier(n))
		}
		return func(key string) locker { return correct.New(ap, key, opts...) }
	}
}

func floorLocker(bound bool) func(ctx context.Context, ap *redis.AutoPipeliner, b *testing.B) func(string) locker {
	return func(ctx context.Context, ap *redis.AutoPipeliner, b *testing.B) func(string) locker {
		var c redis.Cmdable = ap
		if bound {
			bc, err := preflight.Bound(c)
			if err != nil {
				b.Fatal(err)
			}
			c = bc
		}
		return func(key string) locker { return &floor{c: c, key: key, base: keyslot.Base(key)} }
	}
}

// floor is the bench's raw+receipt: SET NX PX with a fresh token, sent
// again after 1ms while refused, and a compare-and-delete that leaves a
// receipt. It is not a lock to use.
type floor struct {
	c    redis.Cmdable
	key  string
	base string
	tok  string
}

var floorRelease = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then
	redis.call("del", KEYS[1])
	redis.call("set", KEYS[2], "1", "px", ARGV[2])
	return 1
end
return tonumber(redis.call("get", KEYS[2]) or 0)`)

func (l *floor) Lock(ctx context.Context) error {
	for {
		tok := token.New()
		err := l.c.SetArgs(ctx, l.key, tok, redis.SetArgs{Mode: "NX", TTL: 8 * time.Second}).Err()
		if err == nil {
			l.tok = tok
			return nil
		}
		if !errors.Is(err, redis.Nil) {
			return err
		}
		t := time.NewTimer(time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

func (l *floor) Unlock(ctx context.Context) error {
	tok := l.tok
	l.tok = ""
	n, err := floorRelease.Run(ctx, l.c, []string{l.key, keyslot.Receipt(l.base, tok)}, tok, retry.ReceiptMS).Int()
	if err == nil && n == 0 {
		err = errors.New("floor: not held at release")
	}
	return err
}

var benchSeq atomic.Int64

func maxProcs() int { return runtime.GOMAXPROCS(0) }
