// Package held keeps the current hold of a lock that holds one claim at a
// time (etcdlock, zklock, pglock): what it is, and since when, so that
// Unlock can tell the observer how long the lock was held. The frame
// around it is internal/frame's Holding.
package held

import (
	"sync"
	"time"
)

// Slot is the current hold of one lock, of type H. The zero Slot holds
// nothing. Its methods are safe for concurrent use.
type Slot[H any] struct {
	mu    sync.Mutex // protects h and since
	h     *H
	since time.Time
}

// Get returns the current hold, or nil when there is none.
func (s *Slot[H]) Get() *H {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.h
}

// Set makes h the current hold, held from now.
func (s *Slot[H]) Set(h *H) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.h, s.since = h, time.Now()
}

// Forget clears the hold if it is still h (a concurrent Lock may have
// replaced it) and returns how long h was held; 0 when h was not the
// current hold.
func (s *Slot[H]) Forget(h *H) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.h != h {
		return 0
	}
	s.h = nil
	return time.Since(s.since)
}

// Closed returns a channel that is already closed: what Done returns when
// a lock holds nothing.
func Closed() <-chan struct{} { return closed }

var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()
