package naive

import (
	"context"
	"time"
)

const (
	// defaultTTL is the lease, as redsync's default expiry.
	defaultTTL = 8 * time.Second
	// defaultPoll is how often Lock retries: naive, fixed-interval polling.
	defaultPoll = 5 * time.Millisecond
)

// Option configures a lock.
type Option func(*options)

type options struct {
	ttl  time.Duration
	poll time.Duration
	hook func(ctx context.Context, point string)
	err  error
}

func newOptions(opts []Option) options {
	o := options{ttl: defaultTTL, poll: defaultPoll}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// WithTTL sets the lock's lease. If ttl <= 0, the lock reports an error
// wrapping [ErrInvalid] on first use. The default is 8s.
func WithTTL(ttl time.Duration) Option {
	return func(o *options) {
		if ttl <= 0 {
			o.err = ErrInvalid
		}
		o.ttl = ttl
	}
}

// WithPoll sets how often Lock retries a taken lock. If d <= 0, the default
// is used. The default is 5ms.
func WithPoll(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.poll = d
		}
	}
}

// WithHook installs fn, called with the operation's context at the lock's
// named hook point (the race window of its mistake). The labs' step
// controller parks a client there. The default is no hook.
func WithHook(fn func(ctx context.Context, point string)) Option {
	return func(o *options) { o.hook = fn }
}
