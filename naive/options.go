package naive

import (
	"context"
	"time"

	"github.com/locklab/locklab/internal/args"
)

const (
	// defaultTTL is the lease, as redsync's default expiry.
	defaultTTL = 8 * time.Second
	// defaultPoll is how often Lock retries: naive, fixed-interval polling.
	defaultPoll = 5 * time.Millisecond
)

// An Option configures a lock. Options are applied in order; when one is
// given twice, the last wins. A nil Option is ignored.
type Option func(*options)

type options struct {
	ttl  time.Duration
	poll time.Duration
	hook func(ctx context.Context, point string)
}

// newOptions applies opts over the defaults and checks the result. Every
// default is valid, so an error can only come from an explicit option.
func newOptions(opts []Option) (options, error) {
	o := options{ttl: defaultTTL, poll: defaultPoll}
	args.Apply(&o, opts)
	switch {
	case o.ttl < time.Millisecond:
		return o, invalid("WithTTL(%v): ttl must be at least 1ms", o.ttl)
	case o.poll <= 0:
		return o, invalid("WithPoll(%v): poll must be positive", o.poll)
	}
	o.ttl = o.ttl.Truncate(time.Millisecond) // what PX will say
	return o, nil
}

// invalid returns an error wrapping ErrInvalid, in the one shape every
// locklab lock package uses: "naive: invalid argument: WithTTL(0s): ...".
func invalid(format string, a ...any) error { return args.Invalid(ErrInvalid, format, a...) }

// WithTTL sets the lock's lease, rounded down to a whole millisecond. If
// ttl is under 1ms (zero or negative included), every method returns an
// error wrapping [ErrInvalid]. The default is 8s.
func WithTTL(ttl time.Duration) Option {
	return func(o *options) { o.ttl = ttl }
}

// WithPoll sets how often Lock retries a taken lock. If d is not positive,
// every method returns an error wrapping [ErrInvalid]. The default is 5ms.
func WithPoll(d time.Duration) Option {
	return func(o *options) { o.poll = d }
}

// WithHook installs fn, called with the operation's context at the lock's
// named hook point (the race window of its mistake). The labs' step
// controller parks a client there. If fn is nil, no hook is called. The
// default is no hook.
func WithHook(fn func(ctx context.Context, point string)) Option {
	return func(o *options) { o.hook = fn }
}
