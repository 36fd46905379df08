package reentrant

import (
	"context"
	"time"

	"github.com/locklab/locklab/internal/args"
	"github.com/locklab/locklab/internal/retry"
	"github.com/locklab/locklab/observe"
)

const (
	// defaultTTL is how long the key lives after each acquire, re-entry,
	// partial release or extend. It bounds how long a crashed owner keeps
	// others out.
	defaultTTL = 10 * time.Second
	// minTTL is the shortest TTL: PEXPIRE counts in whole milliseconds.
	minTTL = time.Millisecond
)

// DelayFunc returns how long [Mutex.Lock] waits before its next try, given
// the number of tries made so far (1 after the first). A delay <= 0 means
// try again at once. It must be safe for concurrent use if shared.
type DelayFunc func(attempt int) time.Duration

// Option configures a [Mutex].
type Option func(*options)

type options struct {
	ttl           time.Duration
	retry         retry.Policy
	hook          func(ctx context.Context, point string)
	observer      observe.Func
	evictionCheck bool
	errs          args.Errs // invalid options, reported by every method
}

// WithTTL sets how long the key lives after each acquire, re-entry and
// partial release: a re-entry and a partial release lengthen the TTL to
// ttl, never shorten it (an inner Lock with a shorter TTL must not cut the
// outer holder's lease). If ttl < 1ms, every method returns an error
// wrapping [ErrInvalid]. The default is 10s.
func WithTTL(ttl time.Duration) Option {
	return func(o *options) {
		o.errs.Add(args.TTL(ErrInvalid, ttl, minTTL))
		o.ttl = ttl
	}
}

// WithRetry sets the wait between the tries of [Mutex.Lock]. If f is nil,
// the default is used. The default is exponential backoff with full
// jitter: after the n-th failed try Lock waits a random time in
// [0, min(2ms*2^(n-1), 64ms)).
func WithRetry(f DelayFunc) Option {
	return func(o *options) { o.retry.Delay = retry.DelayFunc(f) }
}

// WithTries sets how many times [Mutex.Lock] tries before it returns
// [ErrNotObtained]; 0 means no limit, so only Lock's context ends the
// wait. If n is negative, every method returns an error wrapping
// [ErrInvalid]. The default is 0.
func WithTries(n int) Option {
	return func(o *options) {
		o.errs.Add(args.Tries(ErrInvalid, n))
		o.retry.Tries = n
	}
}

// WithEvictionCheck sets whether Lock and TryLock refuse a server that may
// evict keys (maxmemory set, and a maxmemory-policy other than noeviction):
// an evicted lock key lets a second owner in, and nobody is told. The
// check reads INFO memory once a minute per server, where the
// client and the server allow INFO. The default is true.
func WithEvictionCheck(on bool) Option {
	return func(o *options) { o.evictionCheck = on }
}

// WithHook makes the Mutex call f at each step named by a Hook constant,
// in the calling goroutine. f may block: the step waits, which is how the
// labs park an owner between two commands. A nil f means no hook, the
// default.
func WithHook(f func(ctx context.Context, point string)) Option {
	return func(o *options) { o.hook = f }
}

// WithObserver reports to f what the Mutex does (see package observe),
// counting only outermost holds: Acquired when a Lock or TryLock takes the
// lock (count 0 to 1), with how long the call waited; Released when an
// Unlock frees it (count 1 to 0), with how long it was held; GaveUp when
// Lock returns without the lock, re-entry or not, with the cause; and Lost
// when Unlock or Extend finds that an Owner no longer holds the lock. A
// re-entry (count 1 to 2 and up) and a partial Unlock report nothing, so
// wait and hold times describe the lock as other owners see it.
//
// Hold times are measured from the outermost Lock this Mutex made: if that
// Lock went through another Mutex value (or another process), Released
// reports a Held of 0, and a refusal is not reported as Lost, since this
// Mutex cannot tell a lost lock from an Unlock without a Lock. f is called
// in the goroutine of the method, so it must be fast and safe for
// concurrent use. If f is nil, nothing is reported and the Mutex keeps no
// state. The default is nil.
func WithObserver(f observe.Func) Option {
	return func(o *options) { o.observer = f }
}

// invalid returns an error wrapping ErrInvalid, in the one shape every
// locklab lock package uses: "reentrant: invalid argument: WithTTL(0s): ...".
func invalid(format string, a ...any) error { return args.Invalid(ErrInvalid, format, a...) }

func newOptions(opts []Option) (options, error) {
	o := options{ttl: defaultTTL, evictionCheck: true}
	args.Apply(&o, opts)
	return o, o.errs.Err()
}
