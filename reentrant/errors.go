package reentrant

import (
	"errors"

	"github.com/locklab/locklab/internal/preflight"
)

// ErrNotObtained is returned by [Mutex.Lock] when it gave up: every try
// found the lock held by another owner. When the context ended the wait,
// the error is errors.Join(ErrNotObtained, ctx.Err()).
var ErrNotObtained = errors.New("reentrant: lock not obtained")

// ErrNotHeld is returned by [Mutex.Unlock] and [Mutex.Extend] when the
// owner in the context does not hold the lock: it never locked it, already
// unlocked it as many times as it locked it, the lock expired, or another
// owner holds it. Nothing in Redis is changed then.
var ErrNotHeld = errors.New("reentrant: lock not held")

// ErrInvalid is wrapped by the error returned for invalid arguments: a nil
// client, an empty key or an option out of range given to [New] (reported
// by every method), a context without an owner, or an empty owner. The
// error names the argument.
var ErrInvalid = errors.New("reentrant: invalid argument")

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
