package otelobserve

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/locklab/locklab/internal/args"
	"github.com/locklab/locklab/observe"
)

// scope is the instrumentation scope of the meter: this package's import
// path, as OpenTelemetry asks of instrumentation libraries.
const scope = "github.com/locklab/locklab/observe/otelobserve"

// The instruments' names; see the package doc.
const (
	waitName   = "lock.wait.duration"
	holdName   = "lock.hold.duration"
	giveUpName = "lock.give_ups"
	lossName   = "lock.losses"
)

// The attributes' keys.
const (
	kindKey    = attribute.Key("lock.kind")
	outcomeKey = attribute.Key("lock.outcome")
	keyKey     = attribute.Key("lock.key")
)

// New returns an observer that records every event it is given on the
// instruments described in the package doc, made by mp's meter for this
// package. Give it to a lock's WithObserver option; one observer may serve
// every lock of a process, of any kind, since it is safe for concurrent
// use. It records in the goroutine of the lock method that reports, with
// no I/O of its own: the exporter reads the instruments on its schedule.
//
// New returns an error wrapping [ErrInvalid] if mp is nil (pass
// otel.GetMeterProvider() for the global one) or an option is invalid, and
// the meter's error if it cannot make an instrument.
func New(mp metric.MeterProvider, opts ...Option) (observe.Func, error) {
	if args.IsNil(mp) {
		return nil, invalid("nil MeterProvider (pass otel.GetMeterProvider() for the global one)")
	}
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	m := mp.Meter(scope)
	r := &recorder{key: o.key}
	if r.wait, err = m.Float64Histogram(waitName, metric.WithUnit("s"),
		metric.WithDescription("How long a lock's Lock or TryLock waited: until the lock was held (lock.outcome acquired) or until Lock gave up (gave_up)."),
		metric.WithExplicitBucketBoundaries(o.buckets...)); err != nil {
		return nil, err
	}
	if r.hold, err = m.Float64Histogram(holdName, metric.WithUnit("s"),
		metric.WithDescription("How long a lock was held: until Unlock released it (lock.outcome released) or until it was found lost (lost)."),
		metric.WithExplicitBucketBoundaries(o.buckets...)); err != nil {
		return nil, err
	}
	if r.giveUps, err = m.Int64Counter(giveUpName, metric.WithUnit("{give_up}"),
		metric.WithDescription("Lock calls that returned without the lock: the context ended, the tries ran out, or the server failed.")); err != nil {
		return nil, err
	}
	if r.losses, err = m.Int64Counter(lossName, metric.WithUnit("{loss}"),
		metric.WithDescription("Locks lost while held (expired, taken over, or not renewed): a holder may have gone on without its lock.")); err != nil {
		return nil, err
	}
	return r.observe, nil
}

// recorder holds the instruments an observer records on.
type recorder struct {
	key             bool // whether measurements carry lock.key
	wait, hold      metric.Float64Histogram
	giveUps, losses metric.Int64Counter

	// attrs caches, when key is false, the attribute set of each lock
	// kind and event kind (event kind 0 for the counters' set): the sets
	// are few, and building one allocates.
	attrs sync.Map // attrsKey -> metric.MeasurementOption
}

type attrsKey struct {
	lock string
	kind observe.Kind
}

// outcomes are the lock.outcome values of the event kinds.
var outcomes = map[observe.Kind]string{
	observe.Acquired: "acquired",
	observe.GaveUp:   "gave_up",
	observe.Released: "released",
	observe.Lost:     "lost",
}

// observe records e. Events of a kind it does not know are ignored.
func (r *recorder) observe(e observe.Event) {
	outcome, ok := outcomes[e.Kind]
	if !ok {
		return
	}
	ctx := context.Background() // the measurement belongs to no request
	withOutcome := r.attributes(e, outcome, true)
	switch e.Kind {
	case observe.Acquired:
		r.wait.Record(ctx, seconds(e.Wait), withOutcome)
	case observe.GaveUp:
		r.wait.Record(ctx, seconds(e.Wait), withOutcome)
		r.giveUps.Add(ctx, 1, r.attributes(e, outcome, false))
	case observe.Released:
		r.hold.Record(ctx, seconds(e.Held), withOutcome)
	case observe.Lost:
		r.hold.Record(ctx, seconds(e.Held), withOutcome)
		r.losses.Add(ctx, 1, r.attributes(e, outcome, false))
	}
}

// attributes returns e's attributes: lock.kind, lock.outcome if
// withOutcome (the histograms; each counter counts one outcome), and
// lock.key if the observer was asked for it.
func (r *recorder) attributes(e observe.Event, outcome string, withOutcome bool) metric.MeasurementOption {
	if r.key {
		return metric.WithAttributes(keyValues(e, outcome, withOutcome, true)...)
	}
	ck := attrsKey{lock: e.Lock}
	if withOutcome {
		ck.kind = e.Kind
	}
	if opt, ok := r.attrs.Load(ck); ok {
		return opt.(metric.MeasurementOption)
	}
	set := attribute.NewSet(keyValues(e, outcome, withOutcome, false)...)
	opt, _ := r.attrs.LoadOrStore(ck, metric.WithAttributeSet(set))
	return opt.(metric.MeasurementOption)
}

func keyValues(e observe.Event, outcome string, withOutcome, withKey bool) []attribute.KeyValue {
	kv := []attribute.KeyValue{kindKey.String(e.Lock)}
	if withOutcome {
		kv = append(kv, outcomeKey.String(outcome))
	}
	if withKey {
		kv = append(kv, keyKey.String(e.Key))
	}
	return kv
}

// seconds is d in seconds; a negative d (a clock stepped back between two
// readings) counts as 0.
func seconds(d time.Duration) float64 { return max(d, 0).Seconds() }
