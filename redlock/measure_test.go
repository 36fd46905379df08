package redlock_test

// A throwaway side-by-side measurement, not part of the normal test run
// (every test here skips unless REDLOCK_MEASURE is set):
//
//	REDLOCK_MEASURE=1 go test -run 'TestMeasure$' -v -timeout 30m ./redlock/
//
// compares redlock with a Notifier (redlock-notify), redlock polling with
// its defaults (redlock-poll) and redsync with its defaults over 5 pools
// (redsync-5), each client with its own connections (and Notifier), on the
// package's five rig servers: uncontended pairs/s (one goroutine, a fresh
// key and Mutex per pair, 1s slices in rotated order), then one key, 32
// clients, hold 1ms, 3s per run, rounds in rotated order. Server commands
// are INFO commandstats deltas (script-internal commands included).
//
//	REDLOCK_MEASURE_ROUNDS=n           rounds (default 3)
//	REDLOCK_MEASURE_SKIP_UNCONTENDED=1 contended runs only
//	REDLOCK_MEASURE_ONLY=name          one implementation's contended runs
//	REDLOCK_MEASURE_THINK=d            sleep d between Unlock and the next Lock
//	REDLOCK_MEASURE_TRACE=1            log gaps between acquisitions (notify)
//	REDLOCK_MEASURE_CPU=file           CPU profile of TestMeasure
//
// TestMeasureAB interleaves short uncontended slices (REDLOCK_MEASURE_SLICES,
// default 40) and TestMeasureServerCost prints the servers' own time per
// command. Speed claims belong to `go run ./bench`; this only checks the
// package's numbers before the bench does.

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	rsgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/rig"
	"github.com/locklab/locklab/redlock"
)

type pairLocker interface {
	Lock(context.Context) error
	Unlock(context.Context) error
}

type rsLocker struct{ m *redsync.Mutex }

func (l rsLocker) Lock(ctx context.Context) error { return l.m.LockContext(ctx) }
func (l rsLocker) Unlock(ctx context.Context) error {
	_, err := l.m.UnlockContext(ctx)
	return err
}

// contender is one client process: its own connections (and Notifier).
type contender struct {
	locker func(key string) pairLocker
	close  func()
}

type impl struct {
	name    string
	connect func(t testing.TB) contender
}

func ownClients(t testing.TB) []*redis.Client {
	cs := make([]*redis.Client, len(addrs))
	for i, a := range addrs {
		cs[i] = redis.NewClient(rig.ClientOptions(a))
	}
	return cs
}

func closeClients(cs []*redis.Client) {
	for _, c := range cs {
		_ = c.Close()
	}
}

func asRedlock(cs []*redis.Client) []redlock.Client {
	rc := make([]redlock.Client, len(cs))
	for i, c := range cs {
		rc[i] = c
	}
	return rc
}

var impls = []impl{
	{"redlock-notify", func(t testing.TB) contender {
		cs := ownClients(t)
		ncs := make([]redlock.NotifyClient, len(cs))
		for i, c := range cs {
			ncs[i] = c
		}
		n, err := redlock.NewNotifier(context.Background(), ncs)
		if err != nil {
			t.Fatal(err)
		}
		rc := asRedlock(cs)
		return contender{
			locker: func(key string) pairLocker { return redlock.New(rc, key, redlock.WithNotifier(n)) },
			close:  func() { _ = n.Close(); closeClients(cs) },
		}
	}},
	{"redlock-poll", func(t testing.TB) contender {
		cs := ownClients(t)
		rc := asRedlock(cs)
		return contender{
			locker: func(key string) pairLocker { return redlock.New(rc, key) },
			close:  func() { closeClients(cs) },
		}
	}},
	{"redsync-5", func(t testing.TB) contender {
		cs := ownClients(t)
		pools := make([]rsredis.Pool, len(cs))
		for i, c := range cs {
			pools[i] = rsgoredis.NewPool(c)
		}
		rs := redsync.New(pools...)
		return contender{
			locker: func(key string) pairLocker { return rsLocker{rs.NewMutex(key)} },
			close:  func() { closeClients(cs) },
		}
	}},
}

// commandStats sums INFO commandstats calls over the five servers, by
// command, leaving out the harness's own and connection set-up commands.
func commandStats(t *testing.T) map[string]int64 {
	out := map[string]int64{}
	for _, c := range admin {
		info, err := c.Info(context.Background(), "commandstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(info, "\r\n") {
			name, rest, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":calls=")
			if !ok || line == name {
				continue
			}
			switch {
			case name == "info", name == "hello", name == "ping", name == "select",
				strings.HasPrefix(name, "client"), strings.HasPrefix(name, "subscribe"),
				strings.HasPrefix(name, "unsubscribe"), strings.HasPrefix(name, "config"),
				strings.HasPrefix(name, "script"):
				continue
			}
			n, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
			out[name] += n
		}
	}
	return out
}

type row struct {
	impl                    string
	ops                     float64
	p50, p99, p999, maxWait time.Duration
	jain                    float64
	cmds                    float64
	mix                     string
	gaveUp, violations, n   int64
	minPer, maxPer          int
}

func pct(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(i, 0)]
}

func mixOf(delta map[string]int64, per float64) string {
	names := slices.SortedFunc(maps.Keys(delta), func(a, b string) int { return cmp.Compare(delta[b], delta[a]) })
	var parts []string
	for _, n := range names {
		if delta[n] > 0 {
			parts = append(parts, fmt.Sprintf("%s %.2f", n, float64(delta[n])/per))
		}
	}
	return strings.Join(parts, ", ")
}

func statsDelta(before, after map[string]int64) (map[string]int64, int64) {
	d := map[string]int64{}
	var total int64
	for k, v := range after {
		if x := v - before[k]; x > 0 {
			d[k] = x
			total += x
		}
	}
	return d, total
}

func runContended(t *testing.T, im impl, clients int, hold, dur time.Duration, key string) row {
	cons := make([]contender, clients)
	lockers := make([]pairLocker, clients)
	for i := range cons {
		cons[i] = im.connect(t)
		lockers[i] = cons[i].locker(key)
	}
	defer func() {
		for _, c := range cons {
			c.close()
		}
	}()
	bg := context.Background()
	for _, l := range lockers { // warm up: connections, scripts
		if err := l.Lock(bg); err != nil {
			t.Fatalf("%s warm-up: %v", im.name, err)
		}
		if err := l.Unlock(bg); err != nil {
			t.Fatalf("%s warm-up: %v", im.name, err)
		}
	}
	before := commandStats(t)
	var lastRel, holdSum atomic.Int64
	think, _ := time.ParseDuration(os.Getenv("REDLOCK_MEASURE_THINK"))
	var handoffs []time.Duration
	ctx, cancel := context.WithTimeout(bg, dur)
	defer cancel()
	var (
		inside, violations, gaveUp atomic.Int64
		mu                         sync.Mutex
		waits                      []time.Duration
		counts                     = make([]int, clients)
		wg                         sync.WaitGroup
		events                     []string
		trace                      = os.Getenv("REDLOCK_MEASURE_TRACE") != "" && im.name == "redlock-notify"
	)
	start := time.Now()
	for i, l := range lockers {
		wg.Go(func() {
			var mine []time.Duration
			for ctx.Err() == nil {
				wanted := time.Now()
				var err error
				for {
					if err = l.Lock(ctx); err == nil || ctx.Err() != nil {
						break
					}
					gaveUp.Add(1)
				}
				if err != nil {
					break
				}
				got := time.Now()
				if rel := lastRel.Load(); rel > wanted.UnixNano() && ctx.Err() == nil {
					mu.Lock()
					handoffs = append(handoffs, time.Duration(got.UnixNano()-rel))
					mu.Unlock()
				}
				if inside.Add(1) > 1 {
					violations.Add(1)
				}
				if ctx.Err() == nil {
					mine = append(mine, got.Sub(wanted))
					counts[i]++
					if trace {
						mu.Lock()
						events = append(events, fmt.Sprintf("%8.2fms c%02d waited %v", float64(got.Sub(start))/1e6, i, got.Sub(wanted).Round(time.Microsecond)))
						mu.Unlock()
					}
				}
				time.Sleep(hold)
				inside.Add(-1)
				lastRel.Store(time.Now().UnixNano())
				holdSum.Add(int64(time.Since(got)))
				uctx, ucancel := context.WithTimeout(bg, 5*time.Second)
				_ = l.Unlock(uctx)
				ucancel()
				if think > 0 {
					time.Sleep(think)
				}
			}
			mu.Lock()
			waits = append(waits, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	var hsum time.Duration
	for _, h := range handoffs {
		hsum += h
	}
	if len(handoffs) > 0 {
		t.Logf("%s: mean hold %v, mean hand-off %v", im.name, (time.Duration(holdSum.Load()) / time.Duration(max(len(waits), 1))).Round(time.Microsecond), (hsum / time.Duration(len(handoffs))).Round(time.Microsecond))
	}
	slices.Sort(handoffs)
	t.Logf("%s: hand-off (release start to next holder in) p50 %v p99 %v max %v (n=%d)",
		im.name, pct(handoffs, .5).Round(time.Microsecond), pct(handoffs, .99).Round(time.Microsecond), pct(handoffs, 1).Round(time.Microsecond), len(handoffs))
	if trace {
		slices.Sort(events)
		prev := 0.0
		for k, e := range events {
			var at float64
			fmt.Sscanf(strings.TrimSpace(e), "%fms", &at)
			if at-prev > 6 || k < 3 {
				t.Logf("gap %.2fms before: %s", at-prev, e)
			}
			prev = at
		}
	}
	after := commandStats(t)
	slices.Sort(waits)
	n := int64(len(waits))
	var sum, sq float64
	for _, c := range counts {
		sum += float64(c)
		sq += float64(c) * float64(c)
	}
	delta, total := statsDelta(before, after)
	return row{
		impl: im.name, ops: float64(n) / min(elapsed, dur).Seconds(),
		p50: pct(waits, 0.50), p99: pct(waits, 0.99), p999: pct(waits, 0.999), maxWait: pct(waits, 1),
		jain: sum * sum / (float64(clients) * sq), cmds: float64(total) / float64(max(n, 1)),
		mix: mixOf(delta, float64(max(n, 1))), gaveUp: gaveUp.Load(), violations: violations.Load(), n: n,
		minPer: slices.Min(counts), maxPer: slices.Max(counts),
	}
}

// runUncontended does Lock+Unlock pairs on fresh keys from one goroutine,
// making a new lock per pair as the bench does, for dur.
func runUncontended(t *testing.T, im impl, dur time.Duration, seq *atomic.Int64) (float64, float64) {
	con := im.connect(t)
	defer con.close()
	bg := context.Background()
	for range 20 {
		l := con.locker(fmt.Sprintf("measure:warm:%d", seq.Add(1)))
		if err := l.Lock(bg); err != nil {
			t.Fatal(err)
		}
		_ = l.Unlock(bg)
	}
	before := commandStats(t)
	start := time.Now()
	n := 0
	for time.Since(start) < dur {
		l := con.locker(fmt.Sprintf("measure:u:%d", seq.Add(1)))
		if err := l.Lock(bg); err != nil {
			t.Fatal(err)
		}
		if err := l.Unlock(bg); err != nil {
			t.Fatal(err)
		}
		n++
	}
	elapsed := time.Since(start)
	after := commandStats(t)
	_, total := statsDelta(before, after)
	return float64(n) / elapsed.Seconds(), float64(total) / float64(n)
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func TestMeasure(t *testing.T) {
	if os.Getenv("REDLOCK_MEASURE") == "" {
		t.Skip("set REDLOCK_MEASURE=1 to measure")
	}
	rounds := 3
	if s := os.Getenv("REDLOCK_MEASURE_ROUNDS"); s != "" {
		rounds, _ = strconv.Atoi(s)
	}
	var seq atomic.Int64
	const clients, hold, dur = 32, time.Millisecond, 3 * time.Second
	if f := os.Getenv("REDLOCK_MEASURE_CPU"); f != "" {
		out, err := os.Create(f)
		if err != nil {
			t.Fatal(err)
		}
		_ = pprof.StartCPUProfile(out)
		defer func() { pprof.StopCPUProfile(); _ = out.Close() }()
	}

	// Uncontended: pairs/s, alternating slices of 1s so machine drift hits
	// all alike; per-round ratio to redsync-5 in the same round.
	if os.Getenv("REDLOCK_MEASURE_SKIP_UNCONTENDED") == "" {
		ups := map[string][]float64{}
		ratio := map[string][]float64{}
		cmds := map[string]float64{}
		for r := range rounds * 3 {
			got := map[string]float64{}
			for k := range impls {
				im := impls[(k+r)%len(impls)]
				ops, c := runUncontended(t, im, time.Second, &seq)
				got[im.name] = ops
				ups[im.name] = append(ups[im.name], ops)
				cmds[im.name] = c
			}
			for name, ops := range got {
				ratio[name] = append(ratio[name], ops/got["redsync-5"])
			}
		}
		t.Logf("uncontended, 1 goroutine, fresh key per pair, %d x 1s slices each:", rounds*3)
		t.Logf("| impl | pairs/s (median) | min-max | ratio to redsync-5, same slice (median; min-max) | server cmds/pair |")
		t.Logf("|---|---:|---:|---|---:|")
		for _, im := range impls {
			t.Logf("| %s | %.0f | %.0f-%.0f | %.2fx (%.2f-%.2f) | %.2f |", im.name, median(ups[im.name]),
				slices.Min(ups[im.name]), slices.Max(ups[im.name]), median(ratio[im.name]),
				slices.Min(ratio[im.name]), slices.Max(ratio[im.name]), cmds[im.name])
		}
	}

	// Contended: one key, 32 clients, hold 1ms, 3s per run.
	var rows []row
	only := os.Getenv("REDLOCK_MEASURE_ONLY")
	for r := range rounds {
		for k := range impls {
			im := impls[(k+r)%len(impls)]
			if only != "" && im.name != only {
				continue
			}
			key := fmt.Sprintf("measure:c:%d", seq.Add(1))
			rw := runContended(t, im, clients, hold, dur, key)
			rows = append(rows, rw)
			t.Logf("round %d %-15s acq/s %6.0f  wait p50 %-9v p99 %-9v p99.9 %-9v max %-9v  jain %.3f (per client %d-%d)  cmds/acq %.2f  gave-up %d  violations %d",
				r, rw.impl, rw.ops, rw.p50.Round(time.Microsecond), rw.p99.Round(time.Microsecond), rw.p999.Round(time.Microsecond),
				rw.maxWait.Round(time.Microsecond), rw.jain, rw.minPer, rw.maxPer, rw.cmds, rw.gaveUp, rw.violations)
			t.Logf("    mix: %s", rw.mix)
			for _, c := range admin {
				_ = c.Del(context.Background(), key, redlock.QueueKey(key)).Err()
			}
		}
	}
	t.Logf("contended, N=%d, hold %v, %v per run, %d rounds (medians over rounds):", clients, hold, dur, rounds)
	t.Logf("| impl | acq/s | wait p50 | wait p99 | wait p99.9 | wait max (worst round) | Jain | server cmds/acq | gave up | violations |")
	t.Logf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, im := range impls {
		var ops, p50, p99, p999, jain, cmds []float64
		var worst time.Duration
		var gave, viol int64
		for _, rw := range rows {
			if rw.impl != im.name {
				continue
			}
			ops = append(ops, rw.ops)
			p50 = append(p50, float64(rw.p50))
			p99 = append(p99, float64(rw.p99))
			p999 = append(p999, float64(rw.p999))
			jain = append(jain, rw.jain)
			cmds = append(cmds, rw.cmds)
			worst = max(worst, rw.maxWait)
			gave += rw.gaveUp
			viol += rw.violations
		}
		d := func(x float64) time.Duration { return time.Duration(x).Round(10 * time.Microsecond) }
		t.Logf("| %s | %.0f | %v | %v | %v | %v | %.3f | %.2f | %d | %d |", im.name, median(ops), d(median(p50)), d(median(p99)),
			d(median(p999)), worst.Round(10*time.Microsecond), median(jain), median(cmds), gave, viol)
	}
}

func BenchmarkPair(b *testing.B) {
	if os.Getenv("REDLOCK_MEASURE") == "" {
		b.Skip("set REDLOCK_MEASURE=1 to measure")
	}
	for _, name := range []string{"redlock-poll", "redsync-5"} {
		b.Run(name, func(b *testing.B) {
			var im impl
			for _, x := range impls {
				if x.name == name {
					im = x
				}
			}
			con := im.connect(nil)
			defer con.close()
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				l := con.locker("measure:b:" + strconv.Itoa(i))
				if err := l.Lock(ctx); err != nil {
					b.Fatal(err)
				}
				if err := l.Unlock(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestMeasureAB interleaves short slices of uncontended pairs for a few
// variants and reports each one's per-slice ratio to the first.
func TestMeasureAB(t *testing.T) {
	if os.Getenv("REDLOCK_MEASURE") == "" {
		t.Skip("set REDLOCK_MEASURE=1 to measure")
	}
	type variant struct {
		name string
		mk   func(rc []redlock.Client, cs []*redis.Client) func(string) pairLocker
	}
	variants := []variant{
		{"redsync-5", func(_ []redlock.Client, cs []*redis.Client) func(string) pairLocker {
			pools := make([]rsredis.Pool, len(cs))
			for i, c := range cs {
				pools[i] = rsgoredis.NewPool(c)
			}
			rs := redsync.New(pools...)
			return func(key string) pairLocker { return rsLocker{rs.NewMutex(key)} }
		}},
		{"redlock", func(rc []redlock.Client, _ []*redis.Client) func(string) pairLocker {
			return func(key string) pairLocker { return redlock.New(rc, key) }
		}},
	}
	nslices := 40
	if s := os.Getenv("REDLOCK_MEASURE_SLICES"); s != "" {
		nslices, _ = strconv.Atoi(s)
	}
	const slice = 250 * time.Millisecond
	mks := make([]func(string) pairLocker, len(variants))
	for i, v := range variants {
		cs := ownClients(t)
		defer closeClients(cs)
		mks[i] = v.mk(asRedlock(cs), cs)
	}
	ctx := context.Background()
	var seq atomic.Int64
	rates := make([][]float64, len(variants))
	for s := range nslices {
		for k := range variants {
			i := (k + s) % len(variants)
			start := time.Now()
			n := 0
			for time.Since(start) < slice {
				l := mks[i](fmt.Sprintf("measure:ab:%d", seq.Add(1)))
				if err := l.Lock(ctx); err != nil {
					t.Fatal(err)
				}
				if err := l.Unlock(ctx); err != nil {
					t.Fatal(err)
				}
				n++
			}
			rates[i] = append(rates[i], float64(n)/time.Since(start).Seconds())
		}
	}
	for i, v := range variants {
		ratios := make([]float64, nslices)
		for s := range nslices {
			ratios[s] = rates[i][s] / rates[0][s]
		}
		t.Logf("%-18s pairs/s median %5.0f  ratio to %s: median %.3f (p25 %.3f, p75 %.3f)", v.name, median(rates[i]), variants[0].name,
			median(ratios), quantile(ratios, .25), quantile(ratios, .75))
	}
}

func quantile(xs []float64, q float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}

// TestMeasureServerCost prints the server's own time per EVALSHA and SET
// for one uncontended implementation at a time.
func TestMeasureServerCost(t *testing.T) {
	if os.Getenv("REDLOCK_MEASURE") == "" {
		t.Skip("set REDLOCK_MEASURE=1 to measure")
	}
	usec := func() map[string][2]float64 {
		out := map[string][2]float64{}
		for _, c := range admin {
			info, _ := c.Info(context.Background(), "commandstats").Result()
			for _, line := range strings.Split(info, "\r\n") {
				name, rest, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":calls=")
				if !ok {
					continue
				}
				var calls, us float64
				fmt.Sscanf(strings.ReplaceAll(rest, ",", " "), "%f usec=%f", &calls, &us)
				v := out[name]
				out[name] = [2]float64{v[0] + calls, v[1] + us}
			}
		}
		return out
	}
	var seq atomic.Int64
	for _, im := range impls[1:] {
		before := usec()
		runUncontended(t, im, 2*time.Second, &seq)
		after := usec()
		for _, name := range []string{"set", "evalsha", "get", "del", "zpopmin"} {
			calls := after[name][0] - before[name][0]
			if calls > 0 {
				t.Logf("%-13s %-8s %7.0f calls  %.2f us/call (server time, scripts include their inner commands)", im.name, name, calls, (after[name][1]-before[name][1])/calls)
			}
		}
	}
}
