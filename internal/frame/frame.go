// Package frame is what every lock package keeps around its own claim and
// release: the lock's name and key as the observer names them, the
// argument error found by New, the test hook, the observer and, for a lock
// that holds one claim at a time, the current hold; and the lease rule the
// Redis locks share (lease.go: an acquisition that learnt too late that it
// took the lock gives it back).
//
// A lock's Lock, TryLock and Unlock call the frame, top-down, and the
// frame never calls back into the lock: it takes values, and the only
// functions it calls are the user's (the hook and the observer). Each
// lock's methods read the same way (redlock's Lock, here):
//
//	func (m *Mutex) Lock(ctx context.Context) error {
//		if err := m.check(); err != nil { // m.f.Check(ErrInvalid)
//			return err
//		}
//		start := time.Now()
//		err := m.gate.Pass(ctx) // Redis locks: package preflight
//		if err == nil {
//			err = m.lock(ctx)
//		}
//		m.f.Attempted(start, err == nil, err)
//		return err
//	}
package frame

import (
	"context"
	"time"

	"github.com/locklab/locklab/internal/args"
	"github.com/locklab/locklab/internal/held"
	"github.com/locklab/locklab/observe"
)

// Frame is the part of a lock that every lock package has in the same
// shape. New fills it once and never changes it; its methods are safe for
// concurrent use. The zero Frame is that of a lock New did not make:
// [Frame.Check] refuses it.
type Frame struct {
	Kind string                                  // the observer's Lock: "watchdog", "etcdlock", ...; "" for a lock New did not make
	Key  string                                  // the observer's Key: the lock's key or path
	Err  error                                   // invalid arguments found by New (nil client, empty key, options): every method returns it
	Hook func(ctx context.Context, point string) // called at each hook point; nil: none
	Obs  observe.Func                            // nil: no observer
}

// NotMade is what a lock says of a Mutex that [New] did not make, after
// "<pkg>: invalid argument: ".
const NotMade = "Mutex not made by New"

// Check returns the error every method of the lock returns before it
// sends anything: the invalid arguments New found, or, for a lock New did
// not make, an error wrapping invalid, the package's ErrInvalid.
func (f *Frame) Check(invalid error) error {
	if f.Kind == "" {
		return args.Invalid(invalid, NotMade)
	}
	return f.Err
}

// At calls the hook, if there is one, at point.
func (f *Frame) At(ctx context.Context, point string) {
	if f.Hook != nil {
		f.Hook(ctx, point)
	}
}

// Attempted tells the observer, if there is one, how a Lock or TryLock
// that began at start went: acquired (ok), or given up with err; a TryLock
// that found the lock taken (false, nil) is not reported.
func (f *Frame) Attempted(start time.Time, ok bool, err error) {
	observe.Attempt(f.Obs, f.Kind, f.Key, start, ok, err)
}

// Report tells the observer, if there is one, that a hold ended after
// heldFor: kind is observe.Released, or observe.Lost with its cause err.
func (f *Frame) Report(kind observe.Kind, heldFor time.Duration, err error) {
	if f.Obs != nil {
		f.Obs(observe.Event{Kind: kind, Lock: f.Kind, Key: f.Key, Held: heldFor, Err: err})
	}
}

// Holding is the frame of a lock that holds one claim at a time, of type
// H (etcdlock, zklock, pglock): the [Frame] and the current hold.
type Holding[H any] struct {
	Frame
	Cur held.Slot[H] // the current hold
}

// Releasing begins an Unlock, after the lock's check: it returns the
// current hold, or notHeld (the lock's ErrNotHeld) when there is none, and
// calls the hook at point (the lock's HookBeforeRelease) before it returns
// a hold.
func (f *Holding[H]) Releasing(ctx context.Context, notHeld error, point string) (*H, error) {
	h := f.Cur.Get()
	if h == nil {
		return nil, notHeld
	}
	f.At(ctx, point)
	return h, nil
}

// Ended forgets the hold h once Unlock knows how it ended
// ([held.Slot.Forget]), reports it as how (observe.Released, or
// observe.Lost with its cause err, the lock's ErrNotHeld), and returns err.
func (f *Holding[H]) Ended(h *H, how observe.Kind, err error) error {
	f.Report(how, f.Cur.Forget(h), err)
	return err
}

// Closed returns a channel that is already closed: what Done returns when
// a lock holds nothing.
func Closed() <-chan struct{} { return held.Closed() }
