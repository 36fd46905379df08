package lab11_test

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/locklab/locklab/correct"
	"github.com/locklab/locklab/labs"
	"github.com/locklab/locklab/observe"
	"github.com/locklab/locklab/observe/otelobserve"
)

// buckets are the bounds, in seconds, of the OpenTelemetry histograms the
// desks' observers record in: otelobserve's defaults, with steps of 10ms
// or 20ms from 10ms to 100ms, where the holds (60ms) are, and the alert's
// threshold (alertP99, 200ms). The threshold is a bound, as 1s is among
// the defaults for the production rule, so that "p99 over the threshold"
// is read exactly from the buckets.
var buckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.08, 0.1, 0.2, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// desk is one worker of the order service: before it processes an order,
// it takes the order's lock, a correct.Mutex on the key its keyFor gives.
// Every lock it makes reports to the desk's observer, which passes each
// event to an otelobserve observer: OpenTelemetry histograms of how long
// each Lock waited and each lock was held, read by the desk's own
// MeterProvider's manual reader, as an exporter would read an instance's.
//
// A desk is also a labs.Locker, for the lock of one order (the scene
// parameter "order", 1001 unless set), so that the scenario can show two
// workers contending for the same order on the timeline.
type desk struct {
	client *redis.Client
	keyFor func(orderID string) string
	ttl    time.Duration
	one    *correct.Mutex // the lock of the desk's own order; see Lock

	metrics observe.Func            // records the events in OpenTelemetry histograms
	reader  *sdkmetric.ManualReader // reads them

	mu       sync.Mutex // protects the fields below
	acquired int
	gaveUp   int
	lost     int
}

func newDesk(e *labs.Env, keyFor func(string) string) *desk {
	d := &desk{
		client: e.Redis(0),
		keyFor: keyFor,
		ttl:    e.TTL,
		reader: sdkmetric.NewManualReader(),
	}
	metrics, err := otelobserve.New(sdkmetric.NewMeterProvider(sdkmetric.WithReader(d.reader)), otelobserve.WithBuckets(buckets...))
	if err != nil {
		panic(err) // only for invalid arguments: the buckets above
	}
	d.metrics = metrics
	d.one = correct.New(d.client, keyFor(e.Param("order", "1001")), correct.WithTTL(e.TTL), correct.WithHook(e.Hook))
	return d
}

// lockFor returns a lock for the order with id, watched by the desk's
// observer.
func (d *desk) lockFor(id string) *correct.Mutex {
	return correct.New(d.client, d.keyFor(id), correct.WithTTL(d.ttl), correct.WithObserver(d.observe))
}

// observe is the desk's observer. Locks call it in the goroutine of Lock
// or Unlock; the otelobserve observer is safe for all of them at once, and
// the mutex makes the counts so.
func (d *desk) observe(e observe.Event) {
	d.metrics(e) // a give-up waited too: it counts in the wait histogram
	d.mu.Lock()
	defer d.mu.Unlock()
	switch e.Kind {
	case observe.Acquired:
		d.acquired++
	case observe.GaveUp:
		d.gaveUp++
	case observe.Lost:
		d.lost++
	}
}

// stats is what the monitoring side sees: every desk's histograms merged.
type stats struct {
	waits, holds           histogram
	acquired, gaveUp, lost int
}

func merge(desks []*desk) stats {
	var s stats
	for _, d := range desks {
		var rm metricdata.ResourceMetrics
		if err := d.reader.Collect(context.Background(), &rm); err != nil {
			panic(err) // only after the MeterProvider is shut down, which no desk does
		}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				h, _ := m.Data.(metricdata.Histogram[float64])
				switch m.Name {
				case "lock.wait.duration":
					s.waits.add(h.DataPoints)
				case "lock.hold.duration":
					s.holds.add(h.DataPoints)
				}
			}
		}
		d.mu.Lock()
		s.acquired += d.acquired
		s.gaveUp += d.gaveUp
		s.lost += d.lost
		d.mu.Unlock()
	}
	return s
}

// histogram is OpenTelemetry histogram data points (of every outcome, from
// every desk) summed bucket by bucket: what Prometheus's
// sum by (le) (lock_wait_duration_seconds_bucket) is.
type histogram struct {
	bounds   []float64 // upper bounds, in seconds; one bucket more, to +Inf
	counts   []uint64
	count    uint64
	min, max float64
}

func (h *histogram) add(points []metricdata.HistogramDataPoint[float64]) {
	for _, p := range points {
		if h.counts == nil {
			h.bounds, h.counts = p.Bounds, make([]uint64, len(p.BucketCounts))
			h.min, h.max = math.Inf(1), math.Inf(-1)
		}
		for i, c := range p.BucketCounts {
			h.counts[i] += c
		}
		h.count += p.Count
		if v, ok := p.Min.Value(); ok {
			h.min = min(h.min, v)
		}
		if v, ok := p.Max.Value(); ok {
			h.max = max(h.max, v)
		}
	}
}

// quantile returns the q-th percentile of h as a duration, estimated as
// Prometheus's histogram_quantile does (linearly within the bucket the
// q-th percentile falls in), then kept within the smallest and largest
// values recorded, which OpenTelemetry's histograms also keep.
func quantile(h histogram, q float64) time.Duration {
	if h.count == 0 {
		return 0
	}
	rank := q / 100 * float64(h.count)
	var below uint64
	v := h.max
	for i, c := range h.counts {
		if float64(below+c) >= rank && c > 0 && i < len(h.bounds) {
			lower := 0.0
			if i > 0 {
				lower = h.bounds[i-1]
			}
			v = lower + (h.bounds[i]-lower)*(rank-float64(below))/float64(c)
			break
		}
		below += c
	}
	return time.Duration(min(max(v, h.min), h.max) * float64(time.Second))
}

// ms formats d in milliseconds with one decimal, always in ms, so that
// the golden files (which mask numbers but not units) match run to run.
func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond)) }

// The desk as a labs.Locker: the lock of its own order.

func (d *desk) Lock(ctx context.Context) error            { return d.one.Lock(ctx) }
func (d *desk) TryLock(ctx context.Context) (bool, error) { return d.one.TryLock(ctx) }
func (d *desk) Unlock(ctx context.Context) error          { return d.one.Unlock(ctx) }
func (d *desk) Token() string                             { return d.one.Token() }
