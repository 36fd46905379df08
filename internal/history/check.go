package history

import (
	"fmt"
	"slices"
	"time"
)

// A Finding is one broken invariant, named in one sentence.
type Finding struct {
	Kind     string        // "overlap", "stale-write", or "declared"
	Clients  []string      // the clients involved, in order of appearance
	From, To time.Duration // when it happened (To == From for a single event)
	Sentence string
}

func (f Finding) String() string { return f.Sentence }

// Check runs every checker over events (in any order) and returns the
// findings ordered by time: overlapping critical sections, accepted stale
// writes and violations a scenario declared itself.
func Check(events []Event) []Finding {
	ev := slices.Clone(events)
	Sort(ev)
	var out []Finding
	out = append(out, CheckOverlap(ev)...)
	out = append(out, CheckStaleWrites(ev)...)
	for _, e := range ev {
		if e.Kind == Violation {
			out = append(out, Finding{Kind: "declared", Clients: nonEmpty(e.Client), From: e.At, To: e.At, Sentence: e.Text})
		}
	}
	slices.SortStableFunc(out, func(a, b Finding) int { return int(a.From - b.From) })
	return out
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// interval is one client's stay in the critical section; end < 0 means it
// never left before the history ended.
type interval struct {
	client     string
	start, end time.Duration
}

// CheckOverlap reports every period in which two clients were inside the
// critical section at once, between their Enter and Exit events. A client
// that entered and never left stays inside until the end of the history.
// Intervals that only touch (one exits at the instant the other enters) do
// not overlap. events must be sorted (see [Sort]).
func CheckOverlap(events []Event) []Finding {
	var ivs []interval
	open := map[string]int{} // client -> index in ivs of its open interval
	var last time.Duration
	for _, e := range events {
		last = max(last, e.At)
		switch e.Kind {
		case Enter:
			if _, in := open[e.Client]; in {
				continue // a second Enter without Exit extends the stay
			}
			open[e.Client] = len(ivs)
			ivs = append(ivs, interval{client: e.Client, start: e.At, end: -1})
		case Exit:
			if i, in := open[e.Client]; in {
				ivs[i].end = e.At
				delete(open, e.Client)
			}
		}
	}
	for i := range ivs {
		if ivs[i].end < 0 {
			ivs[i].end = last
		}
	}
	// Sweep in start order; intervals are few, so compare each with the
	// ones still open when it starts.
	slices.SortStableFunc(ivs, func(a, b interval) int { return int(a.start - b.start) })
	var out []Finding
	var active []interval
	for _, iv := range ivs {
		active = slices.DeleteFunc(active, func(a interval) bool { return a.end <= iv.start })
		for _, a := range active {
			if a.client == iv.client {
				continue
			}
			from, to := iv.start, min(a.end, iv.end)
			if to <= from {
				continue
			}
			out = append(out, Finding{
				Kind:    "overlap",
				Clients: []string{a.client, iv.client},
				From:    from, To: to,
				Sentence: fmt.Sprintf("%s and %s both in the critical section %s", a.client, iv.client, span(from, to)),
			})
		}
		active = append(active, iv)
	}
	return out
}

// CheckStaleWrites reports every write the resource accepted although a
// write with a newer (or the same) fencing token from another client had
// been accepted before it. Writes without a fencing token are not checked.
// events must be sorted (see [Sort]).
func CheckStaleWrites(events []Event) []Finding {
	var out []Finding
	var newest *Event
	for _, e := range events {
		if e.Kind != Write || !e.OK || e.Fence == 0 {
			continue
		}
		if newest != nil && (e.Fence < newest.Fence || (e.Fence == newest.Fence && e.Client != newest.Client)) {
			what := "older than"
			if e.Fence == newest.Fence {
				what = "the same as"
			}
			out = append(out, Finding{
				Kind:    "stale-write",
				Clients: []string{newest.Client, e.Client},
				From:    e.At, To: e.At,
				Sentence: fmt.Sprintf("%s's write with token %d accepted at %s, %s %s's token %d accepted at %s",
					e.Client, e.Fence, ms(e.At), what, newest.Client, newest.Fence, ms(newest.At)),
			})
			continue
		}
		if newest == nil || e.Fence > newest.Fence {
			ev := e
			newest = &ev
		}
	}
	return out
}

func ms(d time.Duration) string { return fmt.Sprintf("%d ms", d.Milliseconds()) }

// span formats an interval in ms, with a decimal when it is shorter than
// the ms digits can show.
func span(from, to time.Duration) string {
	if a, b := from.Milliseconds(), to.Milliseconds(); a != b {
		return fmt.Sprintf("%d-%d ms", a, b)
	}
	return fmt.Sprintf("%.1f-%.1f ms", float64(from)/1e6, float64(to)/1e6)
}
