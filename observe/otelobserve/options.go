package otelobserve

import (
	"errors"
	"math"
	"slices"

	"github.com/locklab/locklab/internal/args"
)

// ErrInvalid is wrapped by the error [New] returns for an invalid
// argument: a nil MeterProvider, or bad bucket bounds.
var ErrInvalid = errors.New("otelobserve: invalid argument")

// defaultBuckets are the histograms' bucket bounds, in seconds, unless
// [WithBuckets] sets others: from half a millisecond (an uncontended Lock
// on a nearby Redis) to a minute, with 1 s among them (the alert).
var defaultBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// An Option configures [New].
type Option func(*options)

type options struct {
	key     bool
	buckets []float64
}

// WithKey sets whether every measurement also carries the lock's key, as
// attribute lock.key. Each key is then a time series of its own: see "The
// key, only if asked for" in the package doc before turning it on. The
// default is false.
func WithKey(on bool) Option {
	return func(o *options) { o.key = on }
}

// WithBuckets sets the upper bounds, in seconds, of the buckets of both
// histograms (lock.wait.duration and lock.hold.duration). They must be
// finite, at least 0, and increasing; otherwise [New] returns an error
// wrapping [ErrInvalid]. A View in the application's MeterProvider, where
// one matches these instruments, overrides them. The default is 0.0005,
// 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
// 30 and 60.
func WithBuckets(bounds ...float64) Option {
	return func(o *options) { o.buckets = slices.Clone(bounds) }
}

// newOptions applies opts over the defaults and checks the result.
func newOptions(opts []Option) (options, error) {
	o := options{buckets: defaultBuckets}
	args.Apply(&o, opts)
	if len(o.buckets) == 0 {
		return o, invalid("WithBuckets(): no bounds")
	}
	for i, b := range o.buckets {
		switch {
		case math.IsNaN(b) || math.IsInf(b, 0) || b < 0:
			return o, invalid("WithBuckets(%v): bound %v is not a finite number of seconds >= 0", o.buckets, b)
		case i > 0 && b <= o.buckets[i-1]:
			return o, invalid("WithBuckets(%v): bounds must increase (%v after %v)", o.buckets, b, o.buckets[i-1])
		}
	}
	return o, nil
}

// invalid returns an error wrapping ErrInvalid, in the shape every locklab
// package uses: "otelobserve: invalid argument: WithBuckets(): ...".
func invalid(format string, a ...any) error { return args.Invalid(ErrInvalid, format, a...) }
