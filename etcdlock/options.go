package etcdlock

import (
	"context"
	"time"

	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/locklab/locklab/internal/args"
	"github.com/locklab/locklab/observe"
)

const (
	// defaultTTL is the lease of a hold that has its own session: how long
	// etcd keeps the claim of a holder that stopped renewing it (died,
	// froze, lost the network). It is the TTL of the chapter's example,
	// concurrency.WithTTL(10).
	defaultTTL = 10 * time.Second
)

// An Option configures a [Mutex]. Options are applied by [New] in order;
// when one is given twice, the last wins, though an invalid value is
// reported even when a later one replaces it. A nil Option is ignored.
type Option func(*options)

type options struct {
	ttl      time.Duration
	session  *concurrency.Session
	hook     func(ctx context.Context, point string)
	observer observe.Func
	errs     args.Errs // invalid options, reported by every method
}

// newOptions applies opts over the defaults and returns the errors of the
// options out of range, joined.
func newOptions(opts []Option) (options, error) {
	o := options{ttl: defaultTTL}
	args.Apply(&o, opts)
	return o, o.errs.Err()
}

// WithTTL sets the lease of each hold that has a session of its own: if
// the holder stops keeping it alive (its process dies, freezes or loses
// etcd), etcd deletes the claim this long after the last renewal that
// reached it, and the next waiter gets the lock. etcd counts leases in
// whole seconds, so ttl is rounded down to a second. It has no effect with
// [WithSession], whose session has its own TTL. If ttl is under 1s, every
// method of the Mutex returns an error wrapping [ErrInvalid]. The default
// is 10s.
func WithTTL(ttl time.Duration) Option {
	return func(o *options) {
		if ttl < time.Second {
			o.errs.Add(args.Invalid(ErrInvalid, "WithTTL(%v): etcd leases count whole seconds; ttl must be at least 1s", ttl))
		}
		o.ttl = ttl
	}
}

// WithSession attaches every claim of the Mutex to s's lease instead of
// granting a lease per hold: Lock then only writes its claim (after one
// renewal of s's lease) and Unlock only deletes it, with no lease of
// their own to grant and revoke. One session per
// process, for all its locks, is the way etcd's own recipes are meant to
// be used. Each hold also renews s's lease itself while it lasts, so that
// [Mutex.Done] counts from its own renewals (see the package doc); Done
// closes too when s ends. The caller owns s and must Close it; when s ends
// (closed, or its lease expired), every lock held on it is lost, and Lock
// returns an error wrapping [ErrSessionLost] until the caller makes a new
// session. A Lock that withdrew a claim whose answer it never got leaves
// a tombstone key on s's lease until s ends (see the package doc). s must
// come from the same client as the Mutex. If s is nil, each hold has its
// own lease ([WithTTL]). The default is nil. Make s well before it is
// needed: a Session ends when its first keep-alive goes unanswered for the
// client's DialTimeout plus 1s (an election just then), however long its
// TTL; holds with their own lease do not have that limit (keep.go).
func WithSession(s *concurrency.Session) Option {
	return func(o *options) { o.session = s }
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
	// HookClaimed fires in Lock when its claim is written and older claims
	// hold the lock, right before it starts to wait: the Mutex is in line.
	HookClaimed = "claimed"

	// HookAcquired fires in Lock and TryLock once the claim holds the
	// lock: [Mutex.Fence] reports its token, and Lock or TryLock has not
	// yet returned.
	HookAcquired = "acquired"

	// HookBeforeRelease fires in Unlock when the Mutex believes it holds
	// the lock, right before the release is sent.
	HookBeforeRelease = "before-release"
)
