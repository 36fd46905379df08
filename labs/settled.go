package labs

import (
	"context"

	"github.com/locklab/locklab/redlock"
)

// SettledRedlock is package redlock's Mutex for a lab's timeline. Lock,
// TryLock and Unlock return once a majority of nodes holds (or has
// released) the lock, while the commands to slower nodes are still in
// flight; SettledRedlock waits for those too ([redlock.Mutex.Settle]), so
// that the nodes a lab shows next are the same in every run. Every other
// method is the Mutex's own.
type SettledRedlock struct{ *redlock.Mutex }

// Lock is [redlock.Mutex.Lock], then Settle.
func (s SettledRedlock) Lock(ctx context.Context) error {
	if err := s.Mutex.Lock(ctx); err != nil {
		return err
	}
	return s.Settle(ctx)
}

// TryLock is [redlock.Mutex.TryLock], then Settle.
func (s SettledRedlock) TryLock(ctx context.Context) (bool, error) {
	ok, err := s.Mutex.TryLock(ctx)
	if err != nil {
		return ok, err
	}
	return ok, s.Settle(ctx)
}

// Unlock is [redlock.Mutex.Unlock], then Settle, even when ctx has ended
// (as Unlock itself goes on).
func (s SettledRedlock) Unlock(ctx context.Context) error {
	err := s.Mutex.Unlock(ctx)
	if serr := s.Settle(context.WithoutCancel(ctx)); err == nil {
		err = serr
	}
	return err
}
