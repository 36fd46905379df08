package correct

import (
	"context"
	"time"

	"github.com/locklab/locklab/internal/args"
	"github.com/locklab/locklab/internal/retry"
	"github.com/locklab/locklab/observe"
)

// defaultTTL is how long the key lives after SET or Extend: redsync's
// default expiry, so a user moving from redsync keeps the lease they had.
const defaultTTL = 8 * time.Second

// An Option configures a [Mutex]. Options are applied by [New] in order;
// when one is given twice, the last wins, though an earlier one out of
// range is still reported. A nil Option is ignored.
type Option func(*options)

type options struct {
	ttl           time.Duration
	retry         retry.Policy
	hook          func(ctx context.Context, point string)
	notifier      *Notifier
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
// locklab lock package uses: "correct: invalid argument: WithTTL(0s): ...".
func invalid(format string, a ...any) error { return args.Invalid(ErrInvalid, format, a...) }

// A DelayFunc returns how long [Mutex.Lock] waits before its next try,
// given how many tries have failed so far (1 after the first). A delay <= 0
// means try again at once. Lock calls it in the goroutine that called Lock,
// so a DelayFunc shared by Mutexes that lock at the same time must be safe
// for concurrent use: keep any counter in an atomic, or better, keep none.
//
// For example, a fixed 10ms poll:
//
//	correct.WithRetry(func(int) time.Duration { return 10 * time.Millisecond })
type DelayFunc func(attempt int) time.Duration

// WithTTL sets how long the key lives after each successful acquisition: if
// the holder neither unlocks nor extends it in time, Redis deletes the key
// and another client may take the lock. Choose it well above the longest
// time the protected work can take, pauses included (see the package doc).
// Redis counts in milliseconds, so ttl is rounded down to a whole
// millisecond. If ttl is under 1ms (zero or negative included), every
// method of the Mutex returns an error wrapping [ErrInvalid]. The default
// is 8s.
func WithTTL(ttl time.Duration) Option {
	return func(o *options) {
		o.errs.Add(args.TTL(ErrInvalid, ttl, time.Millisecond))
		o.ttl = ttl.Truncate(time.Millisecond) // what PX will say
	}
}

// WithRetry sets the delay between the tries of [Mutex.Lock]; see
// [DelayFunc]. It does not affect [Mutex.TryLock], which tries once, nor a
// Lock with a [Notifier], which does not poll. If f is nil, the default is
// used. The default is exponential backoff with full jitter: after the
// n-th failed try Lock waits a random time in [0, min(2ms*2^(n-1), 64ms)).
func WithRetry(f DelayFunc) Option {
	return func(o *options) { o.retry.Delay = retry.DelayFunc(f) }
}

// WithTries sets how many times [Mutex.Lock] tries to acquire the lock
// before it gives up with [ErrNotObtained]; 0 means no limit, so only
// Lock's context ends the wait. It does not affect [Mutex.TryLock], nor a
// Lock with a [Notifier]. If n is negative, every method of the Mutex
// returns an error wrapping [ErrInvalid]. The default is 0.
func WithTries(n int) Option {
	return func(o *options) {
		o.errs.Add(args.Tries(ErrInvalid, n))
		o.retry.Tries = n
	}
}

// WithHook sets a function called at each named step of the protocol, with
// the context of the method that reached it and the step's name: one of
// [HookAcquired], [HookBeforeRelease], [HookRefused] and [HookQueued]. The
// labs use it to park a client between two commands (to let its key
// expire, or another client in); a hook that blocks holds up that method
// and nothing else. It must be safe for concurrent use if the Mutex is used
// from several goroutines. If f is nil, no hook is called. The default is
// no hook.
func WithHook(f func(ctx context.Context, point string)) Option {
	return func(o *options) { o.hook = f }
}

// WithNotifier makes [Mutex.Lock] wait in a first-come, first-served
// queue instead of polling: the holder's Unlock hands the lock straight to
// the oldest live waiter and tells it through its Notifier, so the lock
// never sits free between holders and nobody is starved (see queue.go for
// the protocol and its failure modes). While the lock looks free, Lock
// first tries to take it as without a Notifier, so an uncontended lock costs
// the same two round trips.
//
// All Mutexes that contend for a key should use a Notifier: a polling
// Mutex only gets the lock when nobody is queued. If n is nil, Lock polls.
// The default is nil (polling with [WithRetry]'s delays).
func WithNotifier(n *Notifier) Option {
	return func(o *options) { o.notifier = n }
}

// WithObserver reports to f what the Mutex does: acquisitions with how long
// Lock waited, give-ups, releases with how long the lock was held, and
// losses found by Unlock, Extend or TTL (see package observe). f is called
// in the goroutine of the method, so it must be fast and safe for
// concurrent use. If f is nil, nothing is reported. The default is nil.
func WithObserver(f observe.Func) Option {
	return func(o *options) { o.observer = f }
}

// WithEvictionCheck sets whether Lock and TryLock refuse a server that may
// evict keys (maxmemory set, and a maxmemory-policy other than noeviction):
// an evicted lock key lets a second holder in, and nobody is told. The
// check reads INFO memory once a minute per server, where the
// client and the server allow INFO; it is skipped where they do not.
// Turn it off only for a server whose memory you know the locks will never
// press. The default is true.
func WithEvictionCheck(on bool) Option {
	return func(o *options) { o.evictionCheck = on }
}
