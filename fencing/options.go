package fencing

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/locklab/locklab/observe"
)

const (
	// defaultTTL is the lease of a lock when [WithTTL] is not given.
	defaultTTL = 8 * time.Second
	// defaultTries is the attempt limit of [Mutex.Lock]; 0 means no limit.
	defaultTries = 0
	// minRetryDelay and maxRetryDelay bound the default backoff.
	minRetryDelay = 2 * time.Millisecond
	maxRetryDelay = 128 * time.Millisecond
	// releaseTimeout bounds an Unlock, which runs on a context detached from
	// the caller's cancellation.
	releaseTimeout = 5 * time.Second
	// lostReplyTimeout bounds the clean-up after an acquire whose reply was
	// lost (it is also capped by the TTL, after which the lease ends the lock).
	lostReplyTimeout = time.Second
)

// Hook points passed to the function given to [WithHook]. Each names the
// step of the protocol about to run or just finished.
const (
	// HookBeforeAcquire fires before each run of the acquire script, in
	// [Mutex.TryLock] and in every attempt of [Mutex.Lock].
	HookBeforeAcquire = "before-acquire"
	// HookAcquired fires after the acquire script granted the lock, when
	// [Mutex.Token] and [Mutex.Until] already report the new hold, before
	// Lock or TryLock returns. Parking a client here is how a lab pauses a
	// holder that believes it holds the lock.
	HookAcquired = "acquired"
	// HookBeforeRelease fires in [Mutex.Unlock] before the release script.
	HookBeforeRelease = "before-release"
	// HookReleased fires in [Mutex.Unlock] after the release script deleted
	// the lock.
	HookReleased = "released"
	// HookBeforeExtend fires in [Mutex.Extend] before the extend script.
	HookBeforeExtend = "before-extend"
)

// DelayFunc returns how long [Mutex.Lock] waits after its attempt-th failed
// attempt (attempt counts from 1) before trying again. A negative delay is
// treated as 0. It may be called from several goroutines at once.
type DelayFunc func(attempt int) time.Duration

// Option configures a [Mutex] made by [New].
type Option func(*options)

type options struct {
	ttl      time.Duration
	tries    int
	delay    DelayFunc
	hook     func(ctx context.Context, point string)
	observer observe.Func
}

func newOptions(opts []Option) options {
	o := options{ttl: defaultTTL, tries: defaultTries, delay: defaultDelay}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

// WithTTL sets the lease: how long the lock lives in Redis after an
// acquisition unless [Mutex.Extend] or [Mutex.Unlock] changes that. Redis
// counts in whole milliseconds, so ttl is truncated to one. If ttl is under
// one millisecond, every method of the Mutex returns an error wrapping
// [ErrInvalid]. The default is 8s.
func WithTTL(ttl time.Duration) Option {
	return func(o *options) { o.ttl = ttl }
}

// WithTries limits [Mutex.Lock] to n attempts; after the n-th failed one it
// returns [ErrNotObtained]. If n <= 0 there is no limit and Lock tries until
// it gets the lock or its context ends. The default is no limit.
func WithTries(n int) Option {
	return func(o *options) { o.tries = max(n, 0) }
}

// WithRetry sets the delay [Mutex.Lock] waits between attempts. If f is nil
// the default is used. The default backs off exponentially with jitter: after
// attempt n it waits a random time in [d/2, d), where d is 2ms·2^(n-1)
// capped at 128ms.
func WithRetry(f DelayFunc) Option {
	return func(o *options) {
		if f != nil {
			o.delay = f
		}
	}
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

// defaultDelay is the backoff documented at [WithRetry].
func defaultDelay(attempt int) time.Duration {
	d := maxRetryDelay
	if shift := max(attempt-1, 0); shift < 7 {
		d = min(minRetryDelay<<shift, maxRetryDelay)
	}
	return d/2 + rand.N(d/2)
}
