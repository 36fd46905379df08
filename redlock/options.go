package redlock

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

const (
	// defaultTTL is the lock's time to live on each node, redsync's default.
	defaultTTL = 8 * time.Second
	// nodeTimeoutFraction is the default per-node timeout as a fraction of
	// the TTL, redsync's default.
	nodeTimeoutFraction = 20 // 5%
	// minNodeTimeout is the least default per-node timeout: a first
	// command on a new connection (dial, HELLO, the command) on a busy
	// machine can take tens of milliseconds.
	minNodeTimeout = 50 * time.Millisecond
	// defaultTries bounds Lock's attempts, redsync's default.
	defaultTries = 32
	// minRetryDelay and maxRetryDelay bound the default random retry delay,
	// redsync's defaults.
	minRetryDelay = 50 * time.Millisecond
	maxRetryDelay = 250 * time.Millisecond
)

// Option configures a [Mutex].
type Option func(*options)

type options struct {
	ttl         time.Duration
	nodeTimeout time.Duration // 0 until resolved: derived from ttl
	tries       int
	delay       DelayFunc
	hook        func(ctx context.Context, point string)
	err         error // the first invalid option, reported by every method
}

// DelayFunc returns how long [Mutex.Lock] waits before its next attempt,
// given the number of attempts made so far (1 after the first failed
// attempt). It is called from the goroutine that runs Lock.
type DelayFunc func(attempt int) time.Duration

// WithTTL sets the time to live of the key on each node: the longest a
// lock outlives a holder that crashed. It is sent in whole milliseconds
// (shorter parts are dropped). The lock is valid for less than that (see the
// package doc): validity = ttl − elapsed − (ttl·1% + 2ms). A ttl below 1ms
// makes every method return an error wrapping [ErrInvalid]. The default is
// 8s.
func WithTTL(ttl time.Duration) Option {
	return func(o *options) {
		if ttl < time.Millisecond {
			o.invalid("ttl %v is below 1ms", ttl)
			return
		}
		o.ttl = ttl.Truncate(time.Millisecond)
	}
}

// WithNodeTimeout sets how long an acquisition, extension or release waits
// for each node's reply. The nodes are asked in parallel, so this also
// bounds the whole round when a node is frozen or unreachable; a node that
// has not answered by then counts as failed ([NodeError]). The timeout is
// enforced by Mutex itself, even when the client does not honour context
// deadlines (go-redis with ContextTimeoutEnabled false); see the package
// doc for what happens to such a late call.
//
// The default is generous, far more than a healthy node needs, even a busy
// one on a loaded machine whose first command must dial, so that a live
// node is not counted as down. Its price is paid only while a node is
// frozen or unreachable: each round then takes that long, and the validity
// is that much shorter. The Redis distlock page suggests less (5–50ms for a
// 10s TTL); set it lower when the nodes are close and quiet and a stalled
// node must cost less.
//
// A d <= 0, or a d not below the TTL, makes every method return an error
// wrapping [ErrInvalid]. The default is 5% of the TTL (redsync's choice:
// 400ms for the default 8s TTL), but at least 50ms and at most half the TTL.
func WithNodeTimeout(d time.Duration) Option {
	return func(o *options) {
		if d <= 0 {
			o.invalid("node timeout %v is not positive", d)
			return
		}
		o.nodeTimeout = d
	}
}

// WithTries sets how many attempts [Mutex.Lock] makes before it returns
// [ErrNotObtained]; [Mutex.TryLock] always makes one. An n < 1 makes every
// method return an error wrapping [ErrInvalid]. The default is 32.
func WithTries(n int) Option {
	return func(o *options) {
		if n < 1 {
			o.invalid("tries %d is below 1", n)
			return
		}
		o.tries = n
	}
}

// WithRetry sets the delay between [Mutex.Lock]'s attempts. It should be
// random, and long compared with an acquisition round, so that clients that
// split the nodes between them do not collide again (the distlock page's
// advice). A delay <= 0 retries at once. A nil f makes every method return
// an error wrapping [ErrInvalid]. The default is a uniformly random delay
// between 50ms and 250ms.
func WithRetry(f DelayFunc) Option {
	return func(o *options) {
		if f == nil {
			o.invalid("nil DelayFunc")
			return
		}
		o.delay = f
	}
}

// WithHook calls f at each named step of the protocol (the Hook constants),
// in the goroutine of the method that reached it, with that method's
// context. f may block: the labs park a client there to reproduce a pause at
// the worst moment. A nil f means no hook. The default is no hook.
func WithHook(f func(ctx context.Context, point string)) Option {
	return func(o *options) { o.hook = f }
}

func newOptions(opts []Option) options {
	o := options{ttl: defaultTTL, tries: defaultTries, delay: randomDelay}
	for _, opt := range opts {
		opt(&o)
	}
	if o.err != nil {
		return o
	}
	if o.nodeTimeout == 0 {
		o.nodeTimeout = defaultNodeTimeout(o.ttl)
	} else if o.nodeTimeout >= o.ttl {
		o.invalid("node timeout %v is not below the ttl %v", o.nodeTimeout, o.ttl)
	}
	return o
}

func (o *options) invalid(format string, args ...any) {
	if o.err == nil {
		o.err = fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
	}
}

// defaultNodeTimeout is 5% of ttl, at least minNodeTimeout, at most ttl/2.
func defaultNodeTimeout(ttl time.Duration) time.Duration {
	return min(max(ttl/nodeTimeoutFraction, minNodeTimeout), ttl/2)
}

// randomDelay is the default DelayFunc. math/rand/v2's top-level functions
// are safe for concurrent use.
func randomDelay(int) time.Duration {
	return minRetryDelay + rand.N(maxRetryDelay-minRetryDelay)
}
