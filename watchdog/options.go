package watchdog

import (
	"context"
	"errors"
	"time"

	"github.com/locklab/locklab/internal/args"
	"github.com/locklab/locklab/internal/retry"
	"github.com/locklab/locklab/observe"
)

const (
	// defaultTTL is the lease: how long the key lives after each renewal.
	// It is also how long a crashed holder keeps the lock from others.
	defaultTTL = 10 * time.Second
	// minTTL is the shortest lease the renewal arithmetic makes sense for.
	minTTL = 10 * time.Millisecond
	// defaultIntervalDivisor sets the renewal interval to ttl/3, as
	// Redisson's watchdog does: two renewals may fail before the lease is
	// at risk.
	defaultIntervalDivisor = 3
	// retryDivisor sets how soon a renewal that failed with a transport
	// error is tried again: after interval/4.
	retryDivisor = 4
)

// margin is what the local lease deadline keeps back from the ttl for
// clock-rate drift between this process and Redis, as redlock-rb does:
// 1% of the ttl plus 2ms.
func margin(ttl time.Duration) time.Duration { return ttl/100 + 2*time.Millisecond }

// DelayFunc returns how long [Mutex.Lock] waits before its next try, given
// the number of tries made so far (1 after the first). A delay <= 0 means
// try again at once. It must be safe for concurrent use if shared.
type DelayFunc func(attempt int) time.Duration

// Option configures a [Mutex] (through [New]) or a [Lease] (through
// [Keep]).
type Option func(*options)

type options struct {
	ttl      time.Duration
	interval time.Duration // 0 means ttl/defaultIntervalDivisor
	maxHold  time.Duration // 0 means no cap
	retry    retry.Policy
	hook     func(ctx context.Context, point string)
	notHeld  func(err error) bool
	observer observe.Func
	// evictionCheck: Lock refuses a server that may evict keys.
	evictionCheck bool
	errs          args.Errs // invalid options, reported by every method
}

// WithTTL sets the lease: each acquire and renewal sets the key to expire
// ttl later, so a holder that crashed blocks others for at most ttl. Used
// by [New] and [Keep]. If ttl < 10ms, every method returns an error
// wrapping [ErrInvalid]. The default is 10s.
func WithTTL(ttl time.Duration) Option {
	return func(o *options) {
		o.errs.Add(args.TTL(ErrInvalid, ttl, minTTL))
		o.ttl = ttl
	}
}

// WithInterval sets how often the lease is renewed, counted from the start
// of the last renewal that succeeded, so late timers do not add up. Used by
// [New] and [Keep]. If d <= 0 or d leaves no room for a renewal before the
// lease runs out (d >= ttl - ttl/100 - 2ms), every method returns an error
// wrapping [ErrInvalid]. The default is ttl/3.
func WithInterval(d time.Duration) Option {
	return func(o *options) {
		if d <= 0 {
			o.errs.Add(invalid("WithInterval(%v): interval must be positive", d))
		}
		o.interval = d
	}
}

// WithMaxHold caps the total time one hold may last, counted from the
// acquire (or from [Keep]). When it is reached, renewal stops, the holder's
// context is cancelled with cause [ErrMaxHold], and a [Mutex] releases the
// lock; a [Lease] from [Keep] leaves the release to its caller. This bounds
// how long a holder stuck in a loop keeps others out, as the Redis docs ask
// for lock extensions. Used by [New] and [Keep]. If d < 0, every method
// returns an error wrapping [ErrInvalid]; 0 means no cap. The default is no
// cap.
func WithMaxHold(d time.Duration) Option {
	return func(o *options) {
		if d < 0 {
			o.errs.Add(invalid("WithMaxHold(%v): cap must not be negative", d))
		}
		o.maxHold = d
	}
}

// WithRetry sets the wait between the tries of [Mutex.Lock]. Used by
// [New]. If f is nil, the default is used. The default is exponential
// backoff with full jitter: after the n-th failed try Lock waits a random
// time in [0, min(2ms*2^(n-1), 64ms)).
func WithRetry(f DelayFunc) Option {
	return func(o *options) { o.retry.Delay = retry.DelayFunc(f) }
}

// WithTries sets how many times [Mutex.Lock] tries before it returns
// [ErrNotObtained]; 0 means no limit, so only Lock's context ends the
// wait. Used by [New]. If n is negative, every method returns an error
// wrapping [ErrInvalid]. The default is 0.
func WithTries(n int) Option {
	return func(o *options) {
		o.errs.Add(args.Tries(ErrInvalid, n))
		o.retry.Tries = n
	}
}

// WithEvictionCheck sets whether Lock and TryLock refuse a server that may
// evict keys (maxmemory set, and a maxmemory-policy other than noeviction):
// an evicted lock key lets a second holder in, and nobody is told. The
// check reads INFO memory once a minute per server, where the
// client and the server allow INFO. Used by [New]. The default is true.
func WithEvictionCheck(on bool) Option {
	return func(o *options) { o.evictionCheck = on }
}

// WithHook makes the Mutex or Lease call f at each step named by a Hook
// constant, in the goroutine that takes the step: the caller of Lock or
// Unlock, the refresher, or (for [HookLost]) the expiry timer. f may
// block: the step waits, which is how the labs park a holder between two
// commands. f must not call Unlock or [Lease.Stop] from the refresher,
// since they wait for the refresher to exit. Used by [New] and [Keep]. A
// nil f means no hook, the default.
func WithHook(f func(ctx context.Context, point string)) Option {
	return func(o *options) { o.hook = f }
}

// WithNotHeld tells [Keep] which errors from [Extender.Extend] mean that
// the lock is no longer ours, for example
//
//	watchdog.WithNotHeld(func(err error) bool { return errors.Is(err, reentrant.ErrNotHeld) })
//
// On such an error the lease ends at once with a cause wrapping
// [ErrNotHeld]. Every other error is taken as transient and retried until
// the lease runs out, so an Extender whose "not ours" error is not
// recognised is still declared lost, one ttl later at most. If f is nil,
// the default is used. The default recognises errors wrapping this
// package's [ErrNotHeld].
func WithNotHeld(f func(err error) bool) Option {
	return func(o *options) {
		if f != nil {
			o.notHeld = f
		}
	}
}

// WithObserver reports to f what the Mutex does (see package observe):
// acquisitions with how long Lock or TryLock waited; give-ups with their
// cause; releases with how long the lock was held, whether by Unlock or
// by the refresher when the Lock context ended or the [WithMaxHold] cap
// was reached; and losses. A loss is reported by the renewal engine the
// moment it declares the lock lost (a renewal refused, or the lease ran
// out), with the same cause that [Mutex.Context] is cancelled with, or by
// Unlock when it finds the key gone. Each hold ends with exactly one
// Released or Lost, except after a release that failed with a transport
// error, which leaves the key to its TTL and reports nothing. f is called
// in the goroutine that takes the step (the caller of Lock or Unlock, the
// refresher, or the expiry timer), so it must be fast, must not block and
// must be safe for concurrent use. Used by [New]; a [Lease] from [Keep]
// reports nothing (its Extender knows its own lock). If f is nil, nothing
// is reported. The default is nil.
func WithObserver(f observe.Func) Option {
	return func(o *options) { o.observer = f }
}

// invalid returns an error wrapping ErrInvalid, in the one shape every
// locklab lock package uses: "watchdog: invalid argument: WithTTL(1ms): ...".
func invalid(format string, a ...any) error { return args.Invalid(ErrInvalid, format, a...) }

// newOptions applies opts over the defaults and checks how they combine.
func newOptions(opts []Option) (options, error) {
	o := options{
		ttl:           defaultTTL,
		notHeld:       func(err error) bool { return errors.Is(err, ErrNotHeld) },
		evictionCheck: true,
	}
	args.Apply(&o, opts)
	if err := o.errs.Err(); err != nil {
		return o, err
	}
	if o.interval == 0 {
		o.interval = o.ttl / defaultIntervalDivisor
	}
	if limit := o.ttl - margin(o.ttl); o.interval >= limit {
		return o, invalid("WithInterval(%v): leaves no time to renew a lease of %v (must be below %v)", o.interval, o.ttl, limit)
	}
	return o, nil
}
