package zklock

import "errors"

// The sentinel errors below have the same names and meanings in every
// locklab lock package. Errors from ZooKeeper or the network are never
// mapped to them: they are returned wrapped with the package prefix, the
// step and the path, so an outage is not mistaken for contention.
var (
	// ErrNotObtained is returned by [Mutex.Lock] when its context ends
	// before the lock is held: the error is errors.Join(ErrNotObtained,
	// ctx.Err()). [Mutex.TryLock] returns it, joined the same way, only
	// when its context has ended; plain contention is (false, nil).
	ErrNotObtained = errors.New("zklock: lock not obtained")

	// ErrNotHeld is returned by [Mutex.Unlock] when the Mutex does not
	// hold the lock: it was never locked, was already unlocked, or its
	// child node is gone (its session expired while it held the lock). A
	// Mutex never deletes a child that is not its own.
	ErrNotHeld = errors.New("zklock: lock not held")

	// ErrInvalid is wrapped by the error returned for invalid arguments: a
	// nil session, a path that is not an absolute ZooKeeper path or is
	// longer than 4 KiB, or a Mutex not made by [New]. New itself cannot fail, so every method of
	// the Mutex returns the error; nothing is sent to ZooKeeper.
	ErrInvalid = errors.New("zklock: invalid argument")

	// ErrSessionLost is returned by Lock and TryLock when the session that
	// owned the Mutex's child ended before the lock was held (the child is
	// gone with it), or the Session has been closed.
	ErrSessionLost = errors.New("zklock: session lost")
)
