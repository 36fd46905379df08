package observe

import (
	"fmt"
	"time"
)

// Kind is what happened.
type Kind uint8

// The kinds of events.
const (
	// Acquired: Lock or TryLock got the lock. Wait is how long the call
	// took, from its start until the lock was held.
	Acquired Kind = iota + 1
	// GaveUp: Lock returned without the lock (its context ended, it ran
	// out of tries, or Redis failed). Wait is how long it tried; Err says
	// why. A TryLock that finds the lock taken is not a give-up.
	GaveUp
	// Released: Unlock released the lock. Held is how long it was held.
	Released
	// Lost: the lock was lost while held (it expired, was taken over, or
	// could not be renewed). Held is how long it had been held; Err says
	// why. Locks that do not watch their lease report a loss only when
	// Unlock or Extend finds it.
	Lost
)

func (k Kind) String() string {
	switch k {
	case Acquired:
		return "acquired"
	case GaveUp:
		return "gave-up"
	case Released:
		return "released"
	case Lost:
		return "lost"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Event is one thing that happened to one lock.
type Event struct {
	Kind Kind
	Lock string // the lock package: "correct", "watchdog", "redlock", ...
	Key  string
	Wait time.Duration // Acquired, GaveUp
	Held time.Duration // Released, Lost
	Err  error         // GaveUp, Lost
}

// Func is an observer.
type Func func(Event)

// Attempt reports to f, if f is not nil, how a Lock or TryLock call on
// lock's key that began at start ended: Acquired when got, GaveUp with err
// when err is not nil, and nothing otherwise (a TryLock that found the
// lock taken, or a reentrant Lock that only re-entered).
func Attempt(f Func, lock, key string, start time.Time, got bool, err error) {
	switch {
	case f == nil:
	case got:
		f(Event{Kind: Acquired, Lock: lock, Key: key, Wait: time.Since(start)})
	case err != nil:
		f(Event{Kind: GaveUp, Lock: lock, Key: key, Wait: time.Since(start), Err: err})
	}
}
