// Package judge judges one fault run on its effect on the protected
// resource (the history of what the clients did and the resource's final
// value), not on what the lock believed.
package judge

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/locklab/locklab/internal/history"
)

// Verdict is what one fault run did to the protected resource, judged on
// the effect (the history of what the clients did and the resource's final
// value), not on what the lock believed.
type Verdict struct {
	// Overlap: two clients inside the critical section at once.
	Overlap        bool
	OverlapAt      time.Duration
	OverlapClients []string
	// LostUpdates: writes the resource accepted whose increment is gone
	// (accepted writes minus the counter's final value).
	LostUpdates int
	// StaleAccepted: writes the resource accepted although a write with a
	// newer fencing token had been accepted before (fenced locks only).
	StaleAccepted int
	// Refused: writes the fenced store Refused (a token not newer than
	// one it had applied).
	Refused int
	// Told: a holder's lock said it was lost (watchdog Done, a cancelled
	// lock context); ToldBeforeOverlap: before the overlap began.
	Told, ToldBeforeOverlap bool
	// MaxStall: the longest time someone waited while nobody was in the
	// critical section; stuck: longer than the schedule's bound.
	MaxStall time.Duration
	Stuck    bool
	// Unsafe: an overlap (for locks without fencing tokens), a lost
	// update or an accepted stale write.
	Unsafe bool
	// Releases: the Unlocks that returned; ReleasesFailed: those that
	// returned an error; FailedTookEffect: those of the failed ones that
	// released the lock all the same, as the harness read it on the lock's
	// servers right after (a note starting TookEffectPrefix). A release
	// reported failed that took effect is a defect for the caller (a
	// retry loop, an alert, a second release), not a safety violation:
	// it counts in neither Unsafe nor Stuck. A failed release that did
	// not take effect leaves the key to its lease: a waiter held up by it
	// shows as a stall.
	Releases, ReleasesFailed, FailedTookEffect int
	Findings                                   []history.Finding
}

// ToldPrefix starts the note an actor records when its lock says it is
// lost.
const ToldPrefix = "told:"

// The notes an actor records right after an Unlock that returned an
// error, from reading the lock's keys on its servers (not from the
// error): before the Unlock the holder's token was there, and now it is
// on none of them (TookEffectPrefix), or still on some (NoEffectPrefix).
// A failed Unlock whose token was already gone before it is a right
// answer, noted with LostBeforePrefix.
const (
	TookEffectPrefix = "release took effect:"
	NoEffectPrefix   = "release did not take effect:"
	LostBeforePrefix = "release read:"
)

// Run reads one run's history. final is the resource's value at the
// end; fenced says the lock gives fencing tokens (an overlap is then
// harmless to the resource unless a write got through out of order);
// stuckAfter is the longest stall that still counts as live.
func Run(events []history.Event, final int64, fenced bool, stuckAfter time.Duration) Verdict {
	ev := slices.Clone(events)
	history.Sort(ev)
	var v Verdict
	for _, f := range history.CheckOverlap(ev) {
		if !v.Overlap {
			v.Overlap, v.OverlapAt, v.OverlapClients = true, f.From, f.Clients
		}
		v.Findings = append(v.Findings, f)
	}
	stale := history.CheckStaleWrites(ev)
	v.StaleAccepted = len(stale)
	v.Findings = append(v.Findings, stale...)

	accepted := 0
	failedRelease := map[string]bool{} // the client's last event was a failed release
	for _, e := range ev {
		if e.Client != "" {
			switch {
			case e.Kind == history.Release:
				v.Releases++
				if !e.OK {
					v.ReleasesFailed++
				}
				failedRelease[e.Client] = !e.OK
				continue
			case e.Kind == history.Note && strings.HasPrefix(e.Text, TookEffectPrefix) && failedRelease[e.Client]:
				// Counted, not a finding: the timeline's findings are
				// violations, and this is none (the note shows it).
				v.FailedTookEffect++
			}
			failedRelease[e.Client] = false
		}
		if e.Kind == history.Write && e.OK {
			accepted++
		}
		if e.Kind == history.Write && !e.OK && e.Fence > 0 {
			v.Refused++
		}
		if e.Kind == history.Note && strings.HasPrefix(e.Text, ToldPrefix) {
			if !v.Told || !v.ToldBeforeOverlap {
				v.Told = true
				if v.Overlap && e.At <= v.OverlapAt && slices.Contains(v.OverlapClients, e.Client) {
					v.ToldBeforeOverlap = true
				}
			}
		}
	}
	if lost := accepted - int(final); lost > 0 {
		v.LostUpdates = lost
		v.Findings = append(v.Findings, history.Finding{Kind: "lost-update", Sentence: fmt.Sprintf(
			"lost update: the resource accepted %d writes but the counter ended at %d, %d increment(s) lost", accepted, final, lost)})
	}
	var stallFrom time.Duration
	v.MaxStall, stallFrom = longestStall(ev)
	if v.MaxStall > stuckAfter {
		v.Stuck = true
		v.Findings = append(v.Findings, history.Finding{Kind: "stall", From: stallFrom, To: stallFrom + v.MaxStall, Sentence: fmt.Sprintf(
			"stuck: from %d ms someone waited %d ms for the lock while nobody held it (more than %v)",
			stallFrom.Milliseconds(), v.MaxStall.Milliseconds(), stuckAfter)})
	}
	v.Unsafe = v.LostUpdates > 0 || v.StaleAccepted > 0 || (v.Overlap && !fenced)
	slices.SortStableFunc(v.Findings, func(a, b history.Finding) int { return int(a.From - b.From) })
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
