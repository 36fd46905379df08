package reentrant

import "errors"

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
