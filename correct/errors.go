package correct

import (
	"errors"

	"github.com/locklab/locklab/internal/preflight"
)

// The sentinel errors below have the same names and meanings in every
// locklab lock package, so callers (and the labs) can test them with
// [errors.Is] without knowing which lock they hold.
//
// Errors from Redis or the network are never mapped to these sentinels:
// they are returned wrapped with the package prefix, the step and the key,
// for example `correct: release "jobs:nightly": dial tcp ...: connection
// refused`, so an outage is not mistaken for contention.
var (
	// ErrNotObtained is returned by [Mutex.Lock] when it gives up without
	// the lock: after the number of tries set by [WithTries], or when its
	// context ends. In the second case the error is
	// errors.Join(ErrNotObtained, ctx.Err()), so both
	// errors.Is(err, ErrNotObtained) and
	// errors.Is(err, context.DeadlineExceeded) (or [context.Canceled])
	// hold. [Mutex.TryLock] returns it, joined the same way, only when its
	// context has ended; plain contention is (false, nil).
	ErrNotObtained = errors.New("correct: lock not obtained")

	// ErrNotHeld is returned by [Mutex.Unlock], [Mutex.Extend] and
	// [Mutex.TTL] when the Mutex does not hold the lock: it was never
	// locked, was already unlocked, or Redis shows that the key expired or
	// now belongs to another holder. In the last two cases the key is left
	// untouched: a Mutex never deletes or extends a lock it does not own.
	ErrNotHeld = errors.New("correct: lock not held")

	// ErrInvalid is wrapped by the error returned for invalid arguments: a
	// nil client (or nil pointer), an empty key, a TTL under one millisecond or a negative
	// number of tries given to [New], a TTL under one millisecond given to
	// [Mutex.Extend], or a Mutex not made by [New]. New itself cannot fail,
	// so its arguments are checked there and every method of the Mutex
	// returns the error; nothing is sent to Redis.
	ErrInvalid = errors.New("correct: invalid argument")
)

// ErrEviction is wrapped by the error Lock and TryLock return for a server
// that may evict keys (maxmemory with a policy other than noeviction): an
// evicted lock key lets a second holder in, and nobody is told. See
// [WithEvictionCheck]. It is one error value in every locklab package.
var ErrEviction = preflight.ErrEviction

// ErrNoScripting is wrapped by the error Lock and TryLock return when the
// user may not run the lock's scripts (its ACL lacks EVALSHA or EVAL):
// the lock would be taken, and could never be released. It is one error
// value in every locklab package.
var ErrNoScripting = preflight.ErrNoScripting
