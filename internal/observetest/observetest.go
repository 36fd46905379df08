// Package observetest records what a lock reports to its observer, for the
// lock packages' tests.
package observetest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locklab/locklab/observe"
)

// Recorder keeps every event it is given, and also passes each on a
// channel, so that a test can wait for an event that a lock's renewal
// goroutine or a timer reports. Its methods are safe for concurrent use.
type Recorder struct {
	ch chan observe.Event

	mu     sync.Mutex // protects events
	events []observe.Event
}

// New returns an empty Recorder.
func New() *Recorder { return &Recorder{ch: make(chan observe.Event, 64)} }

// Observe records e; it is the observer to give the lock.
func (r *Recorder) Observe(e observe.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
	select {
	case r.ch <- e:
	default: // never block the lock; a test that waits reads what it needs
	}
}

// Take returns the events recorded since the last Take and forgets them.
func (r *Recorder) Take() []observe.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.events
	r.events = nil
	return e
}

// Kinds returns the kinds of the events recorded since the last Take,
// separated by spaces.
func (r *Recorder) Kinds() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Kinds(r.events)
}

// Next returns the next event in the order they came, failing t after d.
func (r *Recorder) Next(t testing.TB, d time.Duration) observe.Event {
	t.Helper()
	select {
	case e := <-r.ch:
		return e
	case <-time.After(d):
		t.Fatalf("no event after %v; events so far: %s", d, r.Kinds())
		return observe.Event{}
	}
}

// Expect takes the events recorded since the last Take and fails t unless
// their kinds are want (separated by spaces) and each names lock and key.
// what says which step of the test the events come from. It returns the
// events.
func (r *Recorder) Expect(t testing.TB, what, lock, key, want string) []observe.Event {
	t.Helper()
	events := r.Take()
	if got := Kinds(events); got != want {
		t.Fatalf("%s: events = %q; want %q", what, got, want)
	}
	for _, e := range events {
		if e.Lock != lock || e.Key != key {
			t.Errorf("%s: event %+v: Lock, Key = %q, %q; want %s, %q", what, e, e.Lock, e.Key, lock, key)
		}
	}
	return events
}

// Kinds returns the kinds of events, separated by spaces.
func Kinds(events []observe.Event) string {
	k := make([]string, len(events))
	for i, e := range events {
		k[i] = e.Kind.String()
	}
	return strings.Join(k, " ")
}

// CheckGaveUp fails t unless e, the event of a Lock that gave up at its
// deadline after a call that took took, reports 0 < Wait <= took and a
// deadline error.
func CheckGaveUp(t testing.TB, e observe.Event, took time.Duration) {
	t.Helper()
	if e.Wait <= 0 || e.Wait > took || !errors.Is(e.Err, context.DeadlineExceeded) {
		t.Errorf("gave-up event = %+v; want 0 < Wait <= %v (the Lock call) and a deadline error", e, took)
	}
}
