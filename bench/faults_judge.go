package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/locklab/locklab/internal/history"
)

// verdict is what one fault run did to the protected resource, judged on
// the effect (the history of what the clients did and the resource's final
// value), not on what the lock believed.
type verdict struct {
	// Overlap: two clients inside the critical section at once.
	overlap        bool
	overlapAt      time.Duration
	overlapClients []string
	// LostUpdates: writes the resource accepted whose increment is gone
	// (accepted writes minus the counter's final value).
	lostUpdates int
	// StaleAccepted: writes the resource accepted although a write with a
	// newer fencing token had been accepted before (fenced locks only).
	staleAccepted int
	// Refused: writes the fenced store refused (a token not newer than
	// one it had applied).
	refused int
	// Told: a holder's lock said it was lost (watchdog Done, a cancelled
	// lock context); toldBeforeOverlap: before the overlap began.
	told, toldBeforeOverlap bool
	// MaxStall: the longest time someone waited while nobody was in the
	// critical section; stuck: longer than the schedule's bound.
	maxStall time.Duration
	stuck    bool
	// Unsafe: an overlap (for locks without fencing tokens), a lost
	// update or an accepted stale write.
	unsafe   bool
	findings []history.Finding
}

// toldPrefix starts the note an actor records when its lock says it is
// lost.
const toldPrefix = "told:"

// judge reads one run's history. final is the resource's value at the
// end; fenced says the lock gives fencing tokens (an overlap is then
// harmless to the resource unless a write got through out of order);
// stuckAfter is the longest stall that still counts as live.
func judge(events []history.Event, final int64, fenced bool, stuckAfter time.Duration) verdict {
	ev := slices.Clone(events)
	history.Sort(ev)
	var v verdict
	for _, f := range history.CheckOverlap(ev) {
		if !v.overlap {
			v.overlap, v.overlapAt, v.overlapClients = true, f.From, f.Clients
		}
		v.findings = append(v.findings, f)
	}
	stale := history.CheckStaleWrites(ev)
	v.staleAccepted = len(stale)
	v.findings = append(v.findings, stale...)

	accepted := 0
	for _, e := range ev {
		if e.Kind == history.Write && e.OK {
			accepted++
		}
		if e.Kind == history.Write && !e.OK && e.Fence > 0 {
			v.refused++
		}
		if e.Kind == history.Note && strings.HasPrefix(e.Text, toldPrefix) {
			if !v.told || !v.toldBeforeOverlap {
				v.told = true
				if v.overlap && e.At <= v.overlapAt && slices.Contains(v.overlapClients, e.Client) {
					v.toldBeforeOverlap = true
				}
			}
		}
	}
	if lost := accepted - int(final); lost > 0 {
		v.lostUpdates = lost
		v.findings = append(v.findings, history.Finding{Kind: "lost-update", Sentence: fmt.Sprintf(
			"lost update: the resource accepted %d writes but the counter ended at %d, %d increment(s) lost", accepted, final, lost)})
	}
	var stallFrom time.Duration
	v.maxStall, stallFrom = longestStall(ev)
	if v.maxStall > stuckAfter {
		v.stuck = true
		v.findings = append(v.findings, history.Finding{Kind: "stall", From: stallFrom, To: stallFrom + v.maxStall, Sentence: fmt.Sprintf(
			"stuck: from %d ms someone waited %d ms for the lock while nobody held it (more than %v)",
			stallFrom.Milliseconds(), v.maxStall.Milliseconds(), stuckAfter)})
	}
	v.unsafe = v.lostUpdates > 0 || v.staleAccepted > 0 || (v.overlap && !fenced)
	slices.SortStableFunc(v.findings, func(a, b history.Finding) int { return int(a.From - b.From) })
	return v
}

// longestStall returns the longest time during which at least one client
// wanted the lock and nobody was in the critical section, and when it
// began. A client waits from its Want until its Acquire OK or until it
// gives up; it is inside between Enter and Exit (a killed holder's Exit is
// recorded at the kill). A stall still going at the end of the history
// lasts until its last event.
func longestStall(ev []history.Event) (time.Duration, time.Duration) {
	inside, waiting := map[string]bool{}, map[string]bool{}
	var longest, longestFrom, from time.Duration
	stalled := false
	update := func(at time.Duration) {
		now := len(inside) == 0 && len(waiting) > 0
		switch {
		case now && !stalled:
			stalled, from = true, at
		case !now && stalled:
			stalled = false
			if d := at - from; d > longest {
				longest, longestFrom = d, from
			}
		}
	}
	for _, e := range ev {
		switch e.Kind {
		case history.Want:
			waiting[e.Client] = true
		case history.Acquire:
			if e.OK || strings.HasPrefix(e.Text, "gave up") {
				delete(waiting, e.Client)
			}
		case history.Enter:
			inside[e.Client] = true
		case history.Exit:
			delete(inside, e.Client)
		default:
			continue
		}
		update(e.At)
	}
	if stalled && len(ev) > 0 {
		if d := ev[len(ev)-1].At - from; d > longest {
			longest, longestFrom = d, from
		}
	}
	return longest, longestFrom
}
