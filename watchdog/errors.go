package watchdog

import (
	"errors"

	"github.com/locklab/locklab/internal/preflight"
)

// ErrNotObtained is returned by [Mutex.Lock] when it gave up: every try
// found the lock taken. When the context ended the wait, the error is
// errors.Join(ErrNotObtained, ctx.Err()).
var ErrNotObtained = errors.New("watchdog: lock not obtained")

// ErrNotHeld is returned by [Mutex.Unlock] when the Mutex does not hold the
// lock: it was never locked, is already unlocked, expired, was taken over,
// or the hold ended earlier (see [Mutex.Context]). It is also wrapped by the
// cause of a lost lock: a renewal was refused (the key is no longer ours)
// or no renewal succeeded before the lease ran out.
var ErrNotHeld = errors.New("watchdog: lock not held")

// ErrInvalid is wrapped by the error every method returns when [New] or
// [Keep] got an invalid argument: a nil client or Extender, an empty key,
// or an option out of range. The error names the argument.
var ErrInvalid = errors.New("watchdog: invalid argument")

// ErrReleased is the cause of the holder's context (see [Mutex.Context])
// after [Mutex.Unlock] or [Lease.Stop]: the hold ended because its holder
// asked.
var ErrReleased = errors.New("watchdog: lock released")

// ErrMaxHold is the cause of the holder's context when the hold reached the
// cap set by [WithMaxHold]. A [Mutex] releases the lock at that moment.
var ErrMaxHold = errors.New("watchdog: maximum hold time reached")

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
