package fencing

import (
	"errors"

	"github.com/locklab/locklab/internal/preflight"
)

// ErrNotObtained is returned by [Mutex.Lock] when it gave up: the retry
// budget set by [WithTries] ran out, or the context ended. In the second case
// the error is errors.Join(ErrNotObtained, ctx.Err()), so errors.Is matches
// both.
var ErrNotObtained = errors.New("fencing: lock not obtained")

// ErrNotHeld is returned by [Mutex.Unlock] and [Mutex.Extend] when the Mutex
// does not hold the lock: it was never locked, was already unlocked, or its
// lease ran out (and perhaps someone else took the lock over).
var ErrNotHeld = errors.New("fencing: lock not held")

// ErrInvalid is wrapped by the errors reporting invalid arguments: an empty
// key, a nil client, a TTL under one millisecond, a Mutex not made by [New],
// a nil [*Store], an empty resource id, or [Token] 0. The wrapping error says
// which argument was wrong.
var ErrInvalid = errors.New("fencing: invalid argument")

// ErrStaleToken is wrapped by the error [Store.Write] returns when the
// resource has already accepted a write with the same or a newer token. The
// row is left unchanged. The wrapping error names the resource, the token
// the write carried and the newest token the resource has seen.
var ErrStaleToken = errors.New("fencing: stale token")

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
