package held

import (
	"context"
	"time"

	"github.com/locklab/locklab/observe"
)

// Frame is what pglock keeps around its own claim and release: the lock's
// kind and key as the observer names them, the test hook, the observer,
// and the current hold. It is the frame before internal/frame, which
// calls back into the lock (Attempt's check and acquire); etcdlock and
// zklock have moved to frame.Holding, and Frame goes when pglock does. Its zero value reports
// nothing and calls no hook. A lock sets its fields once, in its
// constructor, and never changes them; Cur is safe for concurrent use.
type Frame[H any] struct {
	Kind string                                  // the observer's Lock: "etcdlock", "zklock", "pglock", "pglock-row"
	Key  string                                  // the observer's Key: the lock's key or path
	Hook func(ctx context.Context, point string) // called at each hook point; nil: none
	Obs  observe.Func                            // nil: no observer
	Cur  Slot[H]                                 // the current hold
}

// Attempt runs one Lock (wait) or TryLock: check, the lock's argument
// checks, whose error it returns at once (no observer hears of it), then
// acquire, and it tells the observer how acquire went ([observe.Attempt],
// timed from after check). It returns what acquire returned.
func (f *Frame[H]) Attempt(ctx context.Context, wait bool, check func() error, acquire func(ctx context.Context, wait bool) (bool, error)) (bool, error) {
	if err := check(); err != nil {
		return false, err
	}
	start := time.Now()
	ok, err := acquire(ctx, wait)
	observe.Attempt(f.Obs, f.Kind, f.Key, start, ok, err)
	return ok, err
}

// At calls the hook, if there is one, at point.
func (f *Frame[H]) At(ctx context.Context, point string) {
	if f.Hook != nil {
		f.Hook(ctx, point)
	}
}

// Report tells the observer, if there is one, that a hold ended after
// heldFor: kind is observe.Released, or observe.Lost with the error
// Unlock returns.
func (f *Frame[H]) Report(kind observe.Kind, heldFor time.Duration, err error) {
	if f.Obs != nil {
		f.Obs(observe.Event{Kind: kind, Lock: f.Kind, Key: f.Key, Held: heldFor, Err: err})
	}
}

// Releasing begins an Unlock: check, the lock's argument checks, whose
// error it returns; then the current hold, or notHeld (the lock's
// ErrNotHeld) when there is none; then the hook at point (the lock's
// HookBeforeRelease). It returns the hold to release.
func (f *Frame[H]) Releasing(ctx context.Context, check func() error, notHeld error, point string) (*H, error) {
	if err := check(); err != nil {
		return nil, err
	}
	h := f.Cur.Get()
	if h == nil {
		return nil, notHeld
	}
	f.At(ctx, point)
	return h, nil
}

// Ended forgets the hold h once Unlock knows how it ended ([Slot.Forget])
// and reports it: lost (its claim was already gone) as observe.Lost with
// notHeld, the lock's ErrNotHeld, which it returns; otherwise as
// observe.Released, returning nil.
func (f *Frame[H]) Ended(h *H, lost bool, notHeld error) error {
	heldFor := f.Cur.Forget(h)
	if lost {
		f.Report(observe.Lost, heldFor, notHeld)
		return notHeld
	}
	f.Report(observe.Released, heldFor, nil)
	return nil
}

// Closed returns a channel that is already closed: what Done returns when
// a lock holds nothing.
func Closed() <-chan struct{} { return closed }

var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()
