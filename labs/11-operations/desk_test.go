package lab11_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/correct"
	"github.com/locklab/locklab/labs"
	"github.com/locklab/locklab/observe"
)

// The range of the wait histograms, in microseconds: 1µs to 1 minute, to 3
// significant digits (HdrHistogram's usual precision).
const (
	histMin    = 1
	histMax    = 60_000_000
	histDigits = 3
)

// desk is one worker of the order service: before it processes an order,
// it takes the order's lock, a correct.Mutex on the key its keyFor gives.
// Every lock it makes reports to the desk's observer, which records how
// long each Lock waited in a histogram, as an application would feed its
// metrics (see package observe).
//
// A desk is also a labs.Locker, for the lock of one order (the scene
// parameter "order", 1001 unless set), so that the scenario can show two
// workers contending for the same order on the timeline.
type desk struct {
	client *redis.Client
	keyFor func(orderID string) string
	ttl    time.Duration
	one    *correct.Mutex // the lock of the desk's own order; see Lock

	mu       sync.Mutex              // protects the fields below
	waits    *hdrhistogram.Histogram // Lock's wait, in µs, of every acquisition
	holds    *hdrhistogram.Histogram // hold time, in µs, of every release
	acquired int
	gaveUp   int
	lost     int
}

func newDesk(e *labs.Env, keyFor func(string) string) *desk {
	d := &desk{
		client: e.Redis(0),
		keyFor: keyFor,
		ttl:    e.TTL,
		waits:  hdrhistogram.New(histMin, histMax, histDigits),
		holds:  hdrhistogram.New(histMin, histMax, histDigits),
	}
	d.one = correct.New(d.client, keyFor(e.Param("order", "1001")), correct.WithTTL(e.TTL), correct.WithHook(e.Hook))
	return d
}

// lockFor returns a lock for the order with id, watched by the desk's
// observer.
func (d *desk) lockFor(id string) *correct.Mutex {
	return correct.New(d.client, d.keyFor(id), correct.WithTTL(d.ttl), correct.WithObserver(d.observe))
}

// observe is the desk's observer. Locks call it in the goroutine of Lock
// or Unlock; the mutex makes it safe for all of them at once.
func (d *desk) observe(e observe.Event) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch e.Kind {
	case observe.Acquired:
		d.acquired++
		_ = d.waits.RecordValue(micros(e.Wait))
	case observe.GaveUp:
		d.gaveUp++ // a give-up waited too: it counts in the wait histogram
		_ = d.waits.RecordValue(micros(e.Wait))
	case observe.Released:
		_ = d.holds.RecordValue(micros(e.Held))
	case observe.Lost:
		d.lost++
	}
}

// micros is d in whole microseconds, within the histograms' range.
func micros(d time.Duration) int64 { return min(max(d.Microseconds(), histMin), histMax) }

// stats is what the monitoring side sees: every desk's histograms merged.
type stats struct {
	waits, holds           *hdrhistogram.Histogram
	acquired, gaveUp, lost int
}

func merge(desks []*desk) stats {
	s := stats{
		waits: hdrhistogram.New(histMin, histMax, histDigits),
		holds: hdrhistogram.New(histMin, histMax, histDigits),
	}
	for _, d := range desks {
		d.mu.Lock()
		s.waits.Merge(d.waits)
		s.holds.Merge(d.holds)
		s.acquired += d.acquired
		s.gaveUp += d.gaveUp
		s.lost += d.lost
		d.mu.Unlock()
	}
	return s
}

// quantile returns the q-th percentile of h as a duration.
func quantile(h *hdrhistogram.Histogram, q float64) time.Duration {
	return time.Duration(h.ValueAtQuantile(q)) * time.Microsecond
}

// ms formats d in milliseconds with one decimal, always in ms, so that
// the golden files (which mask numbers but not units) match run to run.
func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond)) }

// The desk as a labs.Locker: the lock of its own order.

func (d *desk) Lock(ctx context.Context) error            { return d.one.Lock(ctx) }
func (d *desk) TryLock(ctx context.Context) (bool, error) { return d.one.TryLock(ctx) }
func (d *desk) Unlock(ctx context.Context) error          { return d.one.Unlock(ctx) }
func (d *desk) Token() string                             { return d.one.Token() }
