package fencing

import (
	"context"
	"time"

	"github.com/locklab/locklab/internal/args"
	"github.com/locklab/locklab/internal/retry"
	"github.com/locklab/locklab/observe"
)

// defaultTTL is the lease of a lock when [WithTTL] is not given.
const defaultTTL = 8 * time.Second

// DelayFunc returns how long [Mutex.Lock] waits after its attempt-th failed
// attempt (attempt counts from 1) before trying again. A delay <= 0 means
// try again at once. It may be called from several goroutines at once.
type DelayFunc func(attempt int) time.Duration

// Option configures a [Mutex] made by [New].
type Option func(*options)

type options struct {
	ttl           time.Duration
	retry         retry.Policy
	hook          func(ctx context.Context, point string)
	observer      observe.Func
	evictionCheck bool
	errs          args.Errs // invalid options, reported by every method
}

// newOptions applies opts over the defaults and returns the errors of the
// options out of range, joined. Every default is valid, so an error can
// only come from an explicit option.
func newOptions(opts []Option) (options, error) {
	o := options{ttl: defaultTTL, evictionCheck: true}
	args.Apply(&o, opts)
	return o, o.errs.Err()
}

// invalid returns an error wrapping ErrInvalid, in the one shape every
// locklab lock package uses: "fencing: invalid argument: WithTTL(0s): ...".
func invalid(format string, a ...any) error { return args.Invalid(ErrInvalid, format, a...) }

// WithTTL sets the lease: how long the lock lives in Redis after an
// acquisition unless [Mutex.Extend] or [Mutex.Unlock] changes that. Redis
// counts in whole milliseconds, so ttl is truncated to one. If ttl is under
// one millisecond, every method of the Mutex returns an error wrapping
// [ErrInvalid]. The default is 8s.
func WithTTL(ttl time.Duration) Option {
	return func(o *options) {
		o.errs.Add(args.TTL(ErrInvalid, ttl, time.Millisecond))
		o.ttl = ttl
	}
}

// WithTries limits [Mutex.Lock] to n attempts; after the n-th failed one it
// returns [ErrNotObtained]. 0 means no limit: Lock tries until it gets the
// lock or its context ends. If n is negative, every method returns an error
// wrapping [ErrInvalid]. The default is 0.
func WithTries(n int) Option {
	return func(o *options) {
		o.errs.Add(args.Tries(ErrInvalid, n))
		o.retry.Tries = n
	}
}

// WithRetry sets the delay [Mutex.Lock] waits between attempts. If f is nil
// the default is used. The default is exponential backoff with full
// jitter: after the n-th failed attempt Lock waits a random time in
// [0, min(2ms*2^(n-1), 64ms)).
func WithRetry(f DelayFunc) Option {
	return func(o *options) { o.retry.Delay = retry.DelayFunc(f) }
}

// WithEvictionCheck sets whether Lock and TryLock refuse a server that may
// evict keys (maxmemory set, and a maxmemory-policy other than noeviction):
// an evicted lock key lets a second holder in, and an evicted token
// counter makes tokens go back, so a fenced store refuses the new holder.
// The check reads INFO memory once a minute per server, where the
// client and the server allow INFO. The default is true.
func WithEvictionCheck(on bool) Option {
	return func(o *options) { o.evictionCheck = on }
}

// WithHook makes the Mutex call f at each hook point (HookBeforeAcquire,
// HookAcquired, ...) with the context of the method running. f runs on the
// caller's goroutine and may block, which parks the caller at that step; it
// must not call methods of the same Mutex that would wait for the parked
// one. If f is nil there is no hook. The default is no hook.
func WithHook(f func(ctx context.Context, point string)) Option {
	return func(o *options) { o.hook = f }
}

// WithObserver reports to f what the Mutex does (see package observe):
// acquisitions with how long Lock or TryLock waited, give-ups with their
// cause, releases with how long the lock was held, and losses found by
// Unlock or Extend (the lease ran out, or the lock was taken over). The
// Mutex does not watch its lease, so a loss is reported only when one of
// them finds it. f is called in the goroutine of the method, so it must be
// fast and safe for concurrent use. If f is nil, nothing is reported. The
// default is nil.
func WithObserver(f observe.Func) Option {
	return func(o *options) { o.observer = f }
}
