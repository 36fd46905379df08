package otelobserve_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/locklab/locklab/correct"
	"github.com/locklab/locklab/observe"
	"github.com/locklab/locklab/observe/otelobserve"
)

// giveUp is how long the Lock that must give up tries: long enough to be
// told from the fast Locks' waits (well under a millisecond here), short
// enough for a test.
const giveUp = 50 * time.Millisecond

// newObserver returns an observer made with opts on a MeterProvider whose
// only reader is the manual reader returned with it.
func newObserver(t *testing.T, opts ...otelobserve.Option) (observe.Func, *sdkmetric.ManualReader) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	obs, err := otelobserve.New(mp, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return obs, reader
}

// collect reads reader's metrics, by instrument name.
func collect(t *testing.T, reader *sdkmetric.ManualReader) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("Collect: %v", err)
	}
	got := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != "github.com/locklab/locklab/observe/otelobserve" {
			t.Errorf("scope %q; want the package's import path", sm.Scope.Name)
		}
		for _, m := range sm.Metrics {
			got[m.Name] = m
		}
	}
	return got
}

// attrs renders a set as "k=v,k=v", sorted by key, for messages and lookups.
func attrs(s attribute.Set) string {
	var parts []string
	for _, kv := range s.ToSlice() {
		parts = append(parts, string(kv.Key)+"="+kv.Value.Emit())
	}
	return strings.Join(parts, ",")
}

// histogram returns the data points of the histogram named name, by their
// attributes.
func histogram(t *testing.T, ms map[string]metricdata.Metrics, name string) map[string]metricdata.HistogramDataPoint[float64] {
	t.Helper()
	m, ok := ms[name]
	if !ok {
		t.Fatalf("no metric %s among %v", name, names(ms))
	}
	if m.Unit != "s" {
		t.Errorf("%s unit = %q; want s", name, m.Unit)
	}
	h, ok := m.Data.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("%s is a %T; want a float64 histogram", name, m.Data)
	}
	points := map[string]metricdata.HistogramDataPoint[float64]{}
	for _, p := range h.DataPoints {
		points[attrs(p.Attributes)] = p
	}
	return points
}

// counter returns the values of the counter named name, by attributes.
func counter(t *testing.T, ms map[string]metricdata.Metrics, name string) map[string]int64 {
	t.Helper()
	m, ok := ms[name]
	if !ok {
		t.Fatalf("no metric %s among %v", name, names(ms))
	}
	s, ok := m.Data.(metricdata.Sum[int64])
	if !ok || !s.IsMonotonic {
		t.Fatalf("%s is a %T (monotonic: %v); want a monotonic int64 sum", name, m.Data, ok && s.IsMonotonic)
	}
	values := map[string]int64{}
	for _, p := range s.DataPoints {
		values[attrs(p.Attributes)] = p.Value
	}
	return values
}

func names(ms map[string]metricdata.Metrics) []string {
	var n []string
	for name := range ms {
		n = append(n, name)
	}
	slices.Sort(n)
	return n
}

// counts renders data points as "attrs: count" lines, sorted.
func counts(points map[string]metricdata.HistogramDataPoint[float64]) string {
	var lines []string
	for a, p := range points {
		lines = append(lines, fmt.Sprintf("%s: %d", a, p.Count))
	}
	slices.Sort(lines)
	return strings.Join(lines, "; ")
}

// TestCorrectMutex runs two correct.Mutexes through every event on a real
// Redis and reads what the SDK's manual reader collected: A acquires, B's
// TryLock is refused (nothing recorded), B's Lock gives up, A releases, B
// acquires, B's key is deleted under it (as an expiry would) and B's
// Unlock finds the lock lost.
func TestCorrectMutex(t *testing.T) {
	obs, reader := newObserver(t)
	ctx := testContext(t)
	c := newClient(t)
	key := newKey(t)
	a := correct.New(c, key, correct.WithObserver(obs))
	b := correct.New(c, key, correct.WithObserver(obs))

	if err := a.Lock(ctx); err != nil {
		t.Fatalf("A: Lock: %v", err)
	}
	if ok, err := b.TryLock(ctx); ok || err != nil {
		t.Fatalf("B: TryLock = %v, %v; want false, nil (A holds it)", ok, err)
	}
	lctx, cancel := context.WithTimeout(ctx, giveUp)
	err := b.Lock(lctx)
	cancel()
	if !errors.Is(err, correct.ErrNotObtained) {
		t.Fatalf("B: Lock = %v; want ErrNotObtained after %s", err, giveUp)
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatalf("A: Unlock: %v", err)
	}
	if err := b.Lock(ctx); err != nil {
		t.Fatalf("B: Lock: %v", err)
	}
	if err := c.Del(ctx, key).Err(); err != nil {
		t.Fatal(err)
	}
	if err := b.Unlock(ctx); !errors.Is(err, correct.ErrNotHeld) {
		t.Fatalf("B: Unlock after its key was deleted = %v; want ErrNotHeld", err)
	}

	ms := collect(t, reader)
	wait := histogram(t, ms, "lock.wait.duration")
	if got, want := counts(wait), "lock.kind=correct,lock.outcome=acquired: 2; lock.kind=correct,lock.outcome=gave_up: 1"; got != want {
		t.Errorf("lock.wait.duration counts = %s; want %s (the refused TryLock records nothing)", got, want)
	}
	// B's give-up waited giveUp, in seconds.
	if p := wait["lock.kind=correct,lock.outcome=gave_up"]; p.Sum < giveUp.Seconds() || p.Sum > 30 {
		t.Errorf("the give-up's wait = %gs; want at least %gs (seconds, not ms)", p.Sum, giveUp.Seconds())
	}
	hold := histogram(t, ms, "lock.hold.duration")
	if got, want := counts(hold), "lock.kind=correct,lock.outcome=lost: 1; lock.kind=correct,lock.outcome=released: 1"; got != want {
		t.Errorf("lock.hold.duration counts = %s; want %s", got, want)
	}
	// A held the lock for all of B's give-up.
	if p := hold["lock.kind=correct,lock.outcome=released"]; p.Sum < giveUp.Seconds() || p.Sum > 30 {
		t.Errorf("A's hold = %gs; want at least %gs", p.Sum, giveUp.Seconds())
	}
	for _, p := range wait {
		if want := []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}; !slices.Equal(p.Bounds, want) {
			t.Errorf("bucket bounds = %v; want %v", p.Bounds, want)
		}
	}
	if got := counter(t, ms, "lock.give_ups"); fmt.Sprint(got) != "map[lock.kind=correct:1]" {
		t.Errorf("lock.give_ups = %v; want map[lock.kind=correct:1]", got)
	}
	if got := counter(t, ms, "lock.losses"); fmt.Sprint(got) != "map[lock.kind=correct:1]" {
		t.Errorf("lock.losses = %v; want map[lock.kind=correct:1]", got)
	}
}

// TestWithKey: without WithKey, locks on different keys share one series;
// with it, each key has its own.
func TestWithKey(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []otelobserve.Option
		want string
	}{
		{"default", nil, "lock.kind=correct,lock.outcome=acquired: 2"},
		{"off", []otelobserve.Option{otelobserve.WithKey(false)}, "lock.kind=correct,lock.outcome=acquired: 2"},
		{"on", []otelobserve.Option{otelobserve.WithKey(true)}, "lock.key={k}:1,lock.kind=correct,lock.outcome=acquired: 1; lock.key={k}:2,lock.kind=correct,lock.outcome=acquired: 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs, reader := newObserver(t, tc.opts...)
			ctx := testContext(t)
			c := newClient(t)
			key := newKey(t)
			for _, k := range []string{key + ":1", key + ":2"} {
				m := correct.New(c, k, correct.WithObserver(obs))
				if err := m.Lock(ctx); err != nil {
					t.Fatalf("Lock(%s): %v", k, err)
				}
				if err := m.Unlock(ctx); err != nil {
					t.Fatalf("Unlock(%s): %v", k, err)
				}
			}
			got := counts(histogram(t, collect(t, reader), "lock.wait.duration"))
			if want := strings.ReplaceAll(tc.want, "{k}", key); got != want {
				t.Errorf("lock.wait.duration counts = %s; want %s", got, want)
			}
		})
	}
}

// TestBuckets: a wait of exactly 1s falls in the bucket whose bound is 1
// (bounds are inclusive), so the p99 alert "over 1 s" counts it as fast
// enough; 1.5s falls in the next one. WithBuckets replaces the bounds.
func TestBuckets(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   []otelobserve.Option
		bounds []float64
		want   []uint64 // bucket counts
	}{
		{"default", nil,
			[]float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
			[]uint64{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0}},
		{"WithBuckets", []otelobserve.Option{otelobserve.WithBuckets(0.1, 1, 2)},
			[]float64{0.1, 1, 2},
			[]uint64{0, 1, 1, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs, reader := newObserver(t, tc.opts...)
			obs(observe.Event{Kind: observe.Acquired, Lock: "test", Key: "k", Wait: time.Second})
			obs(observe.Event{Kind: observe.Acquired, Lock: "test", Key: "k", Wait: 1500 * time.Millisecond})
			p := histogram(t, collect(t, reader), "lock.wait.duration")["lock.kind=test,lock.outcome=acquired"]
			if !slices.Equal(p.Bounds, tc.bounds) || !slices.Equal(p.BucketCounts, tc.want) || p.Sum != 2.5 {
				t.Errorf("bounds %v, bucket counts %v, sum %g; want %v, %v, 2.5", p.Bounds, p.BucketCounts, p.Sum, tc.bounds, tc.want)
			}
		})
	}
}

// TestOddEvents: an event of a kind the observer does not know records
// nothing, and a negative duration counts as 0.
func TestOddEvents(t *testing.T) {
	obs, reader := newObserver(t)
	obs(observe.Event{Kind: observe.Kind(99), Lock: "test", Wait: time.Second, Held: time.Second})
	obs(observe.Event{Kind: observe.Released, Lock: "test", Held: -time.Second})
	ms := collect(t, reader)
	if _, ok := ms["lock.wait.duration"]; ok {
		t.Errorf("an event of an unknown kind was recorded as a wait")
	}
	p := histogram(t, ms, "lock.hold.duration")["lock.kind=test,lock.outcome=released"]
	if p.Count != 1 || p.Sum != 0 {
		t.Errorf("a hold of -1s: count %d, sum %g; want 1, 0", p.Count, p.Sum)
	}
}

// TestConcurrent: one observer serves many goroutines at once (run with
// -race), and counts every event.
func TestConcurrent(t *testing.T) {
	const goroutines, events = 8, 200
	obs, reader := newObserver(t)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			lock := fmt.Sprintf("kind%d", g%2)
			for range events {
				obs(observe.Event{Kind: observe.GaveUp, Lock: lock, Wait: time.Millisecond, Err: errors.New("test")})
				obs(observe.Event{Kind: observe.Lost, Lock: lock, Held: time.Millisecond, Err: errors.New("test")})
			}
		})
	}
	wg.Wait()
	ms := collect(t, reader)
	want := fmt.Sprintf("map[lock.kind=kind0:%d lock.kind=kind1:%d]", goroutines/2*events, goroutines/2*events)
	for _, name := range []string{"lock.give_ups", "lock.losses"} {
		if got := fmt.Sprint(counter(t, ms, name)); got != want {
			t.Errorf("%s = %s; want %s", name, got, want)
		}
	}
}

// TestInvalid: bad arguments are refused with an error wrapping
// ErrInvalid that names them.
func TestInvalid(t *testing.T) {
	mp := sdkmetric.NewMeterProvider()
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	var nilProvider *sdkmetric.MeterProvider
	for _, tc := range []struct {
		name string
		new  func() (observe.Func, error)
		want string
	}{
		{"nil provider", func() (observe.Func, error) { return otelobserve.New(nil) }, "otelobserve: invalid argument: nil MeterProvider (pass otel.GetMeterProvider() for the global one)"},
		{"typed nil provider", func() (observe.Func, error) { return otelobserve.New(nilProvider) }, "otelobserve: invalid argument: nil MeterProvider (pass otel.GetMeterProvider() for the global one)"},
		{"no bounds", func() (observe.Func, error) { return otelobserve.New(mp, otelobserve.WithBuckets()) }, "otelobserve: invalid argument: WithBuckets(): no bounds"},
		{"decreasing", func() (observe.Func, error) { return otelobserve.New(mp, otelobserve.WithBuckets(1, 0.5)) }, "otelobserve: invalid argument: WithBuckets([1 0.5]): bounds must increase (0.5 after 1)"},
		{"repeated", func() (observe.Func, error) { return otelobserve.New(mp, otelobserve.WithBuckets(1, 1)) }, "otelobserve: invalid argument: WithBuckets([1 1]): bounds must increase (1 after 1)"},
		{"negative", func() (observe.Func, error) { return otelobserve.New(mp, otelobserve.WithBuckets(-1, 1)) }, "otelobserve: invalid argument: WithBuckets([-1 1]): bound -1 is not a finite number of seconds >= 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs, err := tc.new()
			if obs != nil || !errors.Is(err, otelobserve.ErrInvalid) || err.Error() != tc.want {
				t.Errorf("New = %v, %v; want nil, %q", obs != nil, err, tc.want)
			}
		})
	}
}
