package zklock

import (
	"context"

	"github.com/locklab/locklab/internal/args"
	"github.com/locklab/locklab/observe"
)

// An Option configures a [Mutex]. Options are applied by [New] in order;
// when one is given twice, the last wins. A nil Option is ignored.
type Option func(*options)

type options struct {
	hook     func(ctx context.Context, point string)
	observer observe.Func
	errs     args.Errs // invalid options, reported by every method (none yet: every value is valid)
}

// newOptions applies opts over the defaults and returns the errors of the
// options out of range, joined.
func newOptions(opts []Option) (options, error) {
	var o options
	args.Apply(&o, opts)
	return o, o.errs.Err()
}

// WithHook sets a function called at each named step of the protocol, with
// the context of the method that reached it and the step's name: one of
// [HookClaimed], [HookAcquired] and [HookBeforeRelease]. Tests use it to
// park a client between two steps; a hook that blocks holds up that method
// and nothing else. It must be safe for concurrent use if the Mutex is. If
// f is nil, no hook is called. The default is no hook.
func WithHook(f func(ctx context.Context, point string)) Option {
	return func(o *options) { o.hook = f }
}

// WithObserver reports to f what the Mutex does: acquisitions with how long
// Lock waited, give-ups, releases with how long the lock was held, and
// losses found by Unlock (see package observe). f is called in the
// goroutine of the method, so it must be fast and safe for concurrent use.
// If f is nil, nothing is reported. The default is nil.
func WithObserver(f observe.Func) Option {
	return func(o *options) { o.observer = f }
}

// The steps at which the function given to [WithHook] is called.
const (
	// HookClaimed fires in Lock when its child is created and older
	// children hold the lock, right before it starts to wait.
	HookClaimed = "claimed"

	// HookAcquired fires in Lock and TryLock once the child holds the
	// lock: [Mutex.Fence] reports its token, and Lock or TryLock has not
	// yet returned.
	HookAcquired = "acquired"

	// HookBeforeRelease fires in Unlock when the Mutex believes it holds
	// the lock, right before the delete is sent.
	HookBeforeRelease = "before-release"
)
