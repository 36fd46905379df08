package pglock

import (
	"context"

	"github.com/locklab/locklab/internal/args"
	"github.com/locklab/locklab/observe"
)

const (
	// defaultTable holds the rows a [RowMutex] locks, one per key.
	defaultTable = "pglock_rows"
	// fenceSequence gives both locks their fencing tokens (see token.go).
	fenceSequence = "pglock_fence"
)

// An Option configures a [Mutex] or a [RowMutex]. Options are applied by
// the constructor in order; when one is given twice, the last wins, though
// an invalid value is reported even when a later one replaces it. A nil
// Option is ignored.
type Option func(*options)

type options struct {
	table    string
	hook     func(ctx context.Context, point string)
	observer observe.Func
	errs     args.Errs // invalid options, reported by every method
}

// newOptions applies opts over the defaults and returns the errors of the
// options out of range, joined.
func newOptions(opts []Option) (options, error) {
	o := options{table: defaultTable}
	args.Apply(&o, opts)
	return o, o.errs.Err()
}

// WithTable sets the table whose rows a [RowMutex] locks: a table with a
// text primary key column named name, created (if missing) on first use.
// It has no effect on a [Mutex]. If table is empty, every method returns
// an error wrapping [ErrInvalid]. The default is "pglock_rows".
func WithTable(table string) Option {
	return func(o *options) {
		if table == "" {
			o.errs.Add(args.Invalid(ErrInvalid, "WithTable(\"\"): empty table name"))
		}
		o.table = table
	}
}

// WithHook sets a function called at each named step of the protocol, with
// the context of the method that reached it and the step's name: one of
// [HookAcquired] and [HookBeforeRelease]. Tests use it to park a client
// between two steps; a hook that blocks holds up that method and nothing
// else. If f is nil, no hook is called. The default is no hook.
func WithHook(f func(ctx context.Context, point string)) Option {
	return func(o *options) { o.hook = f }
}

// WithObserver reports to f what the lock does: acquisitions with how long
// Lock waited, give-ups, releases with how long the lock was held, and
// losses found by Unlock (see package observe). f is called in the
// goroutine of the method, so it must be fast and safe for concurrent use.
// If f is nil, nothing is reported. The default is nil.
func WithObserver(f observe.Func) Option {
	return func(o *options) { o.observer = f }
}

// The steps at which the function given to [WithHook] is called.
const (
	// HookAcquired fires in Lock and TryLock once the lock is held and its
	// fencing token known, before Lock or TryLock returns.
	HookAcquired = "acquired"

	// HookBeforeRelease fires in Unlock when the lock believes it holds the
	// lock, right before the release (COMMIT, or pg_advisory_unlock) is
	// sent.
	HookBeforeRelease = "before-release"
)
