// Package lab00 holds the code of lab 00: the process mutex the broken run
// uses, and the learner's exercise.
package lab00

import (
	"context"
	"errors"
)

// ProcessMutex is the lock most services start with: a mutex inside the
// process (what sync.Mutex or Java's synchronized gives you). It keeps two
// goroutines of one instance apart, and nothing else: each instance of a
// service is its own process, with its own mutex. The lab's broken run
// uses it; exercise.go starts as a copy of it.
type ProcessMutex struct{ held bool }

// slot is one slot per process.
var slot = make(chan struct{}, 1)

// Lock waits until the process's slot is free or ctx ends.
func (m *ProcessMutex) Lock(ctx context.Context) error {
	select {
	case slot <- struct{}{}:
		m.held = true
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TryLock takes the slot if it is free.
func (m *ProcessMutex) TryLock(context.Context) (bool, error) {
	select {
	case slot <- struct{}{}:
		m.held = true
		return true, nil
	default:
		return false, nil
	}
}

// Unlock frees the slot.
func (m *ProcessMutex) Unlock(context.Context) error {
	if !m.held {
		return errors.New("lab00: unlock of an unlocked lock")
	}
	m.held = false
	<-slot
	return nil
}
