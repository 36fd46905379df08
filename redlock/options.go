package redlock

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/locklab/locklab/internal/args"
	"github.com/locklab/locklab/internal/retry"
	"github.com/locklab/locklab/observe"
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

	// checkFraction sets how often a waiter in the queues checks the nodes
	// itself when it holds none of them (see waiter.nextCheck): every ttl/4, as
	// package correct does. It bounds the wait for a dead holder's keys to
	// expire and for a lost hand-off message.
	checkFraction = 4
	// firstSplitCheck is how long a waiter that holds some nodes, but not a
	// majority, waits for the other hand-offs before it checks the nodes
	// itself. One release reaches every node within a few milliseconds, so
	// a partial hold that lasts longer is a split (nodes handed to
	// different waiters) or a node that failed. The delay doubles at each
	// check, up to the per-node timeout.
	firstSplitCheck = 2 * time.Millisecond
	// lookRank and lookMaxFactor space out the looks of waiters far back
	// in the queues: one with r waiters ahead looks every
	// ttl/4 × min(1 + r/lookRank, lookMaxFactor).
	lookRank      = 8
	lookMaxFactor = 8
)

// Option configures a [Mutex].
type Option func(*options)

type options struct {
	ttl           time.Duration
	nodeTimeout   time.Duration // 0 until resolved: derived from ttl
	retry         retry.Policy
	hook          func(ctx context.Context, point string)
	notifier      *Notifier
	observer      observe.Func
	evictionCheck bool
	errs          args.Errs // invalid options, reported by every method
}

// WithObserver reports to f what the Mutex does: acquisitions with how long
// Lock waited, give-ups, releases with how long the lock was held, and
// losses found by Unlock or Extend (see package observe). f is called in
// the goroutine of the method, so it must be fast and safe for concurrent
// use. If f is nil, nothing is reported. The default is nil.
func WithObserver(f observe.Func) Option {
	return func(o *options) { o.observer = f }
}

// DelayFunc returns how long [Mutex.Lock] waits before its next attempt,
// given the number of attempts made so far (1 after the first failed
// attempt). A delay <= 0 retries at once. It is called from the goroutine
// that runs Lock.
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
			o.errs.Add(invalid("WithTTL(%v): ttl must be at least 1ms", ttl))
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
			o.errs.Add(invalid("WithNodeTimeout(%v): timeout must be positive", d))
			return
		}
		o.nodeTimeout = d
	}
}

// WithTries sets how many attempts [Mutex.Lock] makes before it returns
// [ErrNotObtained]; 0 means no limit, so only Lock's context ends the
// wait. [Mutex.TryLock] always makes one. It applies to polling only: with
// a [Notifier], Lock waits in the queues until its context ends. A
// negative n makes every method return an error wrapping [ErrInvalid]. The
// default is 32, redsync's.
func WithTries(n int) Option {
	return func(o *options) {
		if n < 0 {
			o.errs.Add(invalid("WithTries(%d): tries must be at least 0", n))
			return
		}
		o.retry.Tries = n
	}
}

// WithRetry sets the delay between [Mutex.Lock]'s attempts. It should be
// random, and long compared with an acquisition round, so that clients that
// split the nodes between them do not collide again (the distlock page's
// advice): this is why redlock's default is not the family's 2-64ms
// backoff. A delay <= 0 retries at once. It applies to polling only: with
// a [Notifier], Lock does not poll. If f is nil, the default is used. The
// default is a uniformly random delay between 50ms and 250ms.
func WithRetry(f DelayFunc) Option {
	return func(o *options) {
		if f == nil {
			f = randomDelay
		}
		o.retry.Delay = retry.DelayFunc(f)
	}
}

// WithEvictionCheck sets whether Lock and TryLock refuse nodes that may
// evict keys (maxmemory set, and a maxmemory-policy other than noeviction):
// an evicted key on a majority of nodes lets a second holder in, and
// nobody is told. The check reads INFO memory once a minute per
// node, where the client and the node allow INFO. The default is true.
func WithEvictionCheck(on bool) Option {
	return func(o *options) { o.evictionCheck = on }
}

// WithHook calls f at each named step of the protocol (the Hook constants),
// in the goroutine of the method that reached it, with that method's
// context. f may block: a test can park a client there to reproduce a pause
// at the worst moment. A nil f means no hook. The default is no hook.
func WithHook(f func(ctx context.Context, point string)) Option {
	return func(o *options) { o.hook = f }
}

// WithNotifier makes [Mutex.Lock] wait for the lock in a fair queue on
// every node instead of polling: the holder's Unlock hands each node
// straight to the best waiter there (the one that has wanted the lock
// longest) and tells it through n, so the waiter holds the lock as soon as
// a majority of nodes have handed it over, with no retry delay, no idle gap
// between holders, and no starved waiter. queue.go describes the protocol,
// its failure modes and what bounds each.
//
// n must watch the same nodes as the Mutex, in the same order; otherwise
// every method returns an error wrapping [ErrInvalid]. While the lock looks
// free, Lock first tries the same single SET round as without a Notifier,
// so an uncontended Lock and Unlock still cost one round each. [WithTries]
// and [WithRetry] do not apply: Lock waits until it holds the lock or its
// context ends. [Mutex.TryLock] never queues. All Mutexes that contend for
// a key should use a Notifier: a polling Mutex gets the lock only while
// nobody is queued. A nil n means polling. The default is nil.
func WithNotifier(n *Notifier) Option {
	return func(o *options) { o.notifier = n }
}

func newOptions(opts []Option) (options, error) {
	o := options{ttl: defaultTTL, retry: retry.Policy{Tries: defaultTries, Delay: randomDelay}, evictionCheck: true}
	args.Apply(&o, opts)
	if err := o.errs.Err(); err != nil {
		return o, err
	}
	if o.nodeTimeout == 0 {
		o.nodeTimeout = defaultNodeTimeout(o.ttl)
	} else if o.nodeTimeout >= o.ttl {
		o.errs.Add(invalid("WithNodeTimeout(%v): timeout must be below the ttl %v", o.nodeTimeout, o.ttl))
	}
	return o, o.errs.Err()
}

// invalid returns an error wrapping ErrInvalid, in the one shape every
// locklab lock package uses: "redlock: invalid argument: WithTTL(0s): ...".
func invalid(format string, a ...any) error { return args.Invalid(ErrInvalid, format, a...) }

// defaultNodeTimeout is 5% of ttl, at least minNodeTimeout, at most ttl/2.
func defaultNodeTimeout(ttl time.Duration) time.Duration {
	return min(max(ttl/nodeTimeoutFraction, minNodeTimeout), ttl/2)
}

// randomDelay is the default DelayFunc. math/rand/v2's top-level functions
// are safe for concurrent use.
func randomDelay(int) time.Duration {
	return minRetryDelay + rand.N(maxRetryDelay-minRetryDelay)
}
