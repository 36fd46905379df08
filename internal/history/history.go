// Package history records what the clients of a lab did, on one clock, and
// checks the record for broken mutual exclusion.
//
// The clock is CLOCK_MONOTONIC, which Linux shares between processes, so a
// client running in a child process stamps its events on the same time line
// as the test that drives it: a child frozen with SIGSTOP records nothing
// while frozen and its next event carries the real time it resumed.
//
// The checkers look at the effect on the protected resource, not at who
// believes it holds the lock: [CheckOverlap] finds two clients inside the
// critical section at once (between their Enter and Exit events), and
// [CheckStaleWrites] finds a write the resource accepted although a write
// with a newer fencing token had already been accepted. [Render] draws the
// ASCII swim-lane timeline with every violation named in one sentence.
package history

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Clock reads CLOCK_MONOTONIC relative to a base. Clocks with the same base
// agree across processes.
type Clock struct{ base int64 }

// NewClock returns a clock whose zero is now.
func NewClock() Clock { return Clock{base: monotonic()} }

// ClockAt returns a clock with the given base, as returned by [Clock.Base]
// in another process.
func ClockAt(base int64) Clock { return Clock{base: base} }

// Base returns the clock's zero in CLOCK_MONOTONIC nanoseconds.
func (c Clock) Base() int64 { return c.base }

// Now returns the time since the clock's zero.
func (c Clock) Now() time.Duration { return time.Duration(monotonic() - c.base) }

func monotonic() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic("history: clock_gettime(CLOCK_MONOTONIC): " + err.Error()) // cannot fail on Linux
	}
	return ts.Nano()
}

// Kind is what an event records.
type Kind string

// Event kinds.
const (
	Want      Kind = "want"      // a client called Lock
	Acquire   Kind = "acquire"   // a Lock/TryLock returned: OK (with Token) or not (Text says why)
	Release   Kind = "release"   // an Unlock returned: OK, or not (Text says why)
	Enter     Kind = "enter"     // a client entered the critical section
	Exit      Kind = "exit"      // a client left it
	Write     Kind = "write"     // a write to the protected resource: OK = accepted
	Fault     Kind = "fault"     // something done to the system: SIGSTOP, kill, key expired
	Note      Kind = "note"      // anything else worth showing
	Violation Kind = "violation" // a violation a scenario found itself (Text is the sentence)
)

// Event is one thing that happened. Events are plain data so they can
// cross a pipe from a child process as JSON.
type Event struct {
	At     time.Duration `json:"at"`
	Client string        `json:"client,omitempty"` // "" for faults
	Kind   Kind          `json:"kind"`
	OK     bool          `json:"ok,omitempty"`
	Token  string        `json:"token,omitempty"` // the lock's random owner token
	Fence  uint64        `json:"fence,omitempty"` // a fencing token, when the lock has one
	Text   string        `json:"text,omitempty"`
	Seq    int           `json:"seq"` // order of recording, breaks ties in At
}

// History is an append-only, goroutine-safe list of events.
type History struct {
	clock Clock

	mu     sync.Mutex // protects events
	events []Event
}

// New returns an empty history on clock.
func New(clock Clock) *History { return &History{clock: clock} }

// Clock returns the history's clock.
func (h *History) Clock() Clock { return h.clock }

// Add appends e. When e.At is zero it is stamped with the current time.
func (h *History) Add(e Event) {
	if e.At == 0 {
		e.At = h.clock.Now()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	e.Seq = len(h.events)
	h.events = append(h.events, e)
}

// Record stamps and appends an event of kind for client with text.
func (h *History) Record(client string, kind Kind, ok bool, text string) {
	h.Add(Event{Client: client, Kind: kind, OK: ok, Text: text})
}

// Faultf records a fault (client "") with a formatted text.
func (h *History) Faultf(format string, args ...any) {
	h.Add(Event{Kind: Fault, Text: fmt.Sprintf(format, args...)})
}

// Events returns a copy of the events ordered by time, then by recording
// order.
func (h *History) Events() []Event {
	h.mu.Lock()
	ev := slices.Clone(h.events)
	h.mu.Unlock()
	Sort(ev)
	return ev
}

// Sort orders events by time, then by recording order.
func Sort(ev []Event) {
	slices.SortStableFunc(ev, func(a, b Event) int {
		if c := cmp.Compare(a.At, b.At); c != 0 {
			return c
		}
		return cmp.Compare(a.Seq, b.Seq)
	})
}
