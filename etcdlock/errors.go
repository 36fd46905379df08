package etcdlock

import "errors"

// The sentinel errors below have the same names and meanings in every
// locklab lock package. Errors from etcd or the network are never mapped
// to them: they are returned wrapped with the package prefix, the step and
// the key, so an outage is not mistaken for contention.
var (
	// ErrNotObtained is returned by [Mutex.Lock] when its context ends
	// before the lock is held: the error is errors.Join(ErrNotObtained,
	// ctx.Err()). [Mutex.TryLock] returns it, joined the same way, only
	// when its context has ended; plain contention is (false, nil).
	ErrNotObtained = errors.New("etcdlock: lock not obtained")

	// ErrNotHeld is returned by [Mutex.Unlock] when the Mutex does not
	// hold the lock: it was never locked, was already unlocked, or its
	// claim is gone (the lease expired or was revoked while it held it).
	// A Mutex never deletes a claim that is not its own.
	ErrNotHeld = errors.New("etcdlock: lock not held")

	// ErrInvalid is wrapped by the error returned for invalid arguments: a
	// nil client, an empty key, a TTL under one second, or a Mutex not
	// made by [New]. New itself cannot fail, so every method of the
	// Mutex returns the error; nothing is sent to etcd.
	ErrInvalid = errors.New("etcdlock: invalid argument")

	// ErrSessionLost is returned by Lock and TryLock when the lease the
	// claim was attached to ended before the lock was held (it expired
	// while the client could not reach etcd, or the session given with
	// [WithSession] had already ended), or could no longer be vouched for
	// (no renewal answered in time: the hold's Done would have been
	// closed already). A shared session cannot be
	// revived: make a new one.
	ErrSessionLost = errors.New("etcdlock: session lost")
)
