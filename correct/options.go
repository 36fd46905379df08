package correct

import (
	"context"
	"fmt"
	"time"

	"github.com/locklab/locklab/observe"
)

const (
	// defaultTTL is how long the key lives after SET or Extend. It is
	// redsync's default expiry, so the bench compares like with like.
	defaultTTL = 8 * time.Second

	// defaultTries is the number of acquisition attempts Lock makes; 0
	// means no limit, so only the context bounds the wait.
	defaultTries = 0

	// defaultMinDelay and defaultMaxDelay bound the default backoff (see
	// backoff in wait.go): the delay after the first failed try is drawn
	// from [0, 2ms), and the ceiling doubles with each further failure up
	// to 64ms.
	defaultMinDelay = 2 * time.Millisecond
	defaultMaxDelay = 64 * time.Millisecond
)

// An Option configures a [Mutex]. Options are applied by [New] in order;
// when one is given twice, the last wins. A nil Option is ignored.
type Option func(*options)

type options struct {
	ttl      time.Duration
	delay    DelayFunc
	tries    int
	hook     func(ctx context.Context, point string)
	notifier *Notifier
	observer observe.Func
}

// newOptions applies opts over the defaults and checks the result. An
// invalid value can only come from an explicit option, since every default
// is valid.
func newOptions(opts []Option) (options, []error) {
	o := options{ttl: defaultTTL, delay: backoff, tries: defaultTries}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	var errs []error
	if o.ttl < time.Millisecond {
		errs = append(errs, fmt.Errorf("%w: WithTTL(%v): ttl must be at least 1ms", ErrInvalid, o.ttl))
	}
	o.ttl = o.ttl.Truncate(time.Millisecond) // what PX will say; see WithTTL
	if o.tries < 0 {
		errs = append(errs, fmt.Errorf("%w: WithTries(%d): tries must be >= 0", ErrInvalid, o.tries))
	}
	return o, errs
}

// A DelayFunc returns how long [Mutex.Lock] waits before its next try,
// given how many tries have failed so far (1 after the first). A delay <= 0
// means try again at once. Lock calls it in the goroutine that called Lock,
// so a
// DelayFunc shared by Mutexes that lock at the same time must be safe for
// concurrent use: keep any counter in an atomic, or better, keep none.
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
	return func(o *options) { o.ttl = ttl }
}

// WithRetry sets the delay between the tries of [Mutex.Lock]; see
// [DelayFunc]. It does not affect [Mutex.TryLock], which tries once. If f is
// nil, the default is used. The default is exponential backoff with full
// jitter: after the n-th failed try Lock waits a random time in
// [0, min(2ms*2^(n-1), 64ms)).
func WithRetry(f DelayFunc) Option {
	return func(o *options) {
		if f == nil {
			f = backoff
		}
		o.delay = f
	}
}

// WithTries sets how many times [Mutex.Lock] tries to acquire the lock
// before it gives up with [ErrNotObtained]; 0 means no limit, so only
// Lock's context ends the wait. It does not affect [Mutex.TryLock]. If n is
// negative, every method of the Mutex returns an error wrapping
// [ErrInvalid]. The default is 0.
func WithTries(n int) Option {
	return func(o *options) { o.tries = n }
}

// WithHook sets a function called at each named step of the protocol, with
// the context of the method that reached it and the step's name: one of
// [HookAcquired], [HookBeforeRelease], [HookRefused] and [HookQueued]. The labs use it to park a client
// between two commands (to let its key expire, or another client in); a
// hook that blocks holds up that method and nothing else. It must be safe
// for concurrent use if the Mutex is used from several goroutines. If f is
// nil, no hook is called. The default is no hook.
func WithHook(f func(ctx context.Context, point string)) Option {
	return func(o *options) { o.hook = f }
}

// WithNotifier makes [Mutex.Lock] wait in a first-come, first-served
// queue instead of polling: a waiter joins the lock's queue with one RPUSH
// and sleeps until the holder's Unlock hands the lock straight to it (one
// script: owner check, pop the oldest live waiter, SET its token, PUBLISH
// to it), so the lock never sits free between holders and nobody is
// starved. A waiter also checks the lock itself every ttl/4, which bounds
// the wait when no hand-off will come (the holder died; a message was
// lost). While the lock looks free, Lock first tries SET NX as without a
// Notifier, so an uncontended lock costs the same two round trips.
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

// The steps at which the function given to [WithHook] is called.
const (
	// HookAcquired fires in Lock and TryLock right after Redis accepted
	// the SET NX: the key holds this Mutex's new token, [Mutex.Token] and
	// [Mutex.Until] report it, and Lock or TryLock has not yet returned.
	HookAcquired = "acquired"

	// HookBeforeRelease fires in Unlock when the Mutex believes it holds
	// the lock, right before the release script is sent. Parking here past
	// the TTL shows why release must check the token.
	HookBeforeRelease = "before-release"
)
