package frame

import (
	"errors"
	"fmt"
	"time"
)

// The lease rule the Redis locks share (correct, watchdog, fencing,
// reentrant): the lease counts from just before the command that took the
// lock was sent, never from its answer, and an acquisition whose answer
// comes back with less than half the TTL left is given back at once
// rather than handed to the caller. Lock then tries again; TryLock returns
// the error. So when Lock returns nil, at least half the TTL is left.

// Late reports whether a lease of ttl, counted from sent, has less than
// half of it left: too little to hand to the caller. Half, because a
// holder that keeps the TTL several times its work still has its work's
// time and more.
func Late(sent time.Time, ttl time.Duration) bool {
	return LateAt(sent, time.Now(), ttl)
}

// LateAt is [Late] with the clock already read, at now (the moment the
// answer came): for a lock that keeps now as well (when the hold began).
func LateAt(sent, now time.Time, ttl time.Duration) bool {
	return sent.Add(ttl).Sub(now) < ttl/2
}

// TooLate returns the error of an attempt whose answer came too late
// ([Late]), wrapping notObtained (the lock's ErrNotObtained), in one
// shape: `<pkg>: lock not obtained: "key": the SET's answer came 412ms
// after it was sent, leaving less than half the 500ms ttl; the lock was
// given back`. what names the command that took or renewed the lock (SET,
// acquire, renewal), sent is when it was sent, and undone says what became
// of the lock. The lock wraps it in a [Short] once the lock is given back.
func (f *Frame) TooLate(notObtained error, what string, sent time.Time, ttl time.Duration, undone string) error {
	return fmt.Errorf("%w: %q: the %s's answer came %v after it was sent, leaving less than half the %v ttl; %s",
		notObtained, f.Key, what, time.Since(sent).Round(time.Millisecond), ttl, undone)
}

// A Short is the error of an attempt that took the lock but learnt so late
// that less than half the TTL was left ([Late]), and gave it back: Lock
// tries again (see [Shorts]); TryLock returns it. Its Err wraps the lock's
// ErrNotObtained.
type Short struct{ Err error }

func (s Short) Error() string { return s.Err.Error() }
func (s Short) Unwrap() error { return s.Err }

// IsShort reports whether err is exactly a [Short] (no other error joined
// to it, such as a failed give-back).
func IsShort(err error) bool {
	_, ok := err.(Short)
	return ok
}

// Shorts keeps, across the attempts of one Lock, the last one that took
// the lock too late: such an attempt counts as a refusal, and when Lock
// gives up, its error says why a Lock on a slow link never got the lock.
// The zero value is ready to use.
type Shorts struct{ last error }

// Keep passes on an attempt's result, with a [Short] taken for a refusal
// (false, nil) and kept.
func (s *Shorts) Keep(ok bool, err error) (bool, error) {
	if IsShort(err) {
		s.last = err
		return false, nil
	}
	return ok, err
}

// Join returns err, Lock's error, with the last Short kept joined to it
// when err says that Lock gave up (it wraps notObtained, the lock's
// ErrNotObtained).
func (s *Shorts) Join(err, notObtained error) error {
	if s.last != nil && errors.Is(err, notObtained) {
		return errors.Join(err, s.last)
	}
	return err
}
