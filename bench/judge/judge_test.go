package judge

import (
	"testing"
	"time"

	"github.com/locklab/locklab/internal/history"
)

// ev builds a history event at ms milliseconds.
func ev(ms int, client string, kind history.Kind, ok bool, text string, fence uint64) history.Event {
	return history.Event{At: time.Duration(ms) * time.Millisecond, Client: client, Kind: kind, OK: ok, Text: text, Fence: fence}
}

func TestJudge(t *testing.T) {
	W, A, E, X, Wr, N := history.Want, history.Acquire, history.Enter, history.Exit, history.Write, history.Note
	// A holds, is paused; B gets in and writes 1; A resumes and writes 1
	// too (both read 0).
	paused := []history.Event{
		ev(0, "A", W, false, "", 0), ev(1, "A", A, true, "", 1), ev(2, "A", E, false, "", 0),
		ev(10, "B", W, false, "", 0), ev(1000, "B", A, true, "", 2), ev(1001, "B", E, false, "", 0),
		ev(1002, "B", Wr, true, "1", 0), ev(1100, "B", X, false, "", 0),
		ev(1200, "A", Wr, true, "1", 0), ev(1201, "A", X, false, "", 0),
	}
	// The same with fencing: A's late write is refused.
	fenced := append([]history.Event{}, paused...)
	fenced[6] = ev(1002, "B", Wr, true, "1", 2)
	fenced[8] = ev(1200, "A", Wr, false, "1 (refused: stale token)", 1)
	// A store that accepted A's older token after B's newer one.
	stale := append([]history.Event{}, fenced...)
	stale[6] = ev(1002, "B", Wr, true, "1", 3)
	stale[8] = ev(1200, "A", Wr, true, "2", 2)
	// A is killed inside; B gets in 1.5 s later.
	killed := []history.Event{
		ev(0, "A", W, false, "", 0), ev(1, "A", A, true, "", 0), ev(2, "A", E, false, "", 0),
		ev(5, "A", X, false, "(killed)", 0),
		ev(6, "B", W, false, "", 0), ev(1506, "B", A, true, "", 0), ev(1507, "B", E, false, "", 0),
		ev(1508, "B", Wr, true, "1", 0), ev(1600, "B", X, false, "", 0),
	}
	// A's watchdog tells it the lock is lost before B gets in, but A is
	// still inside: told before the overlap.
	told := []history.Event{
		ev(0, "A", W, false, "", 0), ev(1, "A", A, true, "", 0), ev(2, "A", E, false, "", 0),
		ev(10, "B", W, false, "", 0), ev(900, "A", N, false, "told: the lock is lost", 0),
		ev(1000, "B", A, true, "", 0), ev(1001, "B", E, false, "", 0), ev(1002, "B", Wr, true, "1", 0),
		ev(1003, "A", X, false, "", 0), ev(1100, "B", X, false, "", 0),
	}
	// B waits for a lock nobody holds and gives up: stuck until it gave up.
	gaveUp := []history.Event{
		ev(0, "B", W, false, "", 0), ev(5000, "B", A, false, "gave up after 5s and 12 Lock calls: ...", 0),
	}
	tests := []struct {
		name     string
		events   []history.Event
		final    int64
		fenced   bool
		unsafe   bool
		overlap  bool
		lost     int
		told     bool
		before   bool
		stall    time.Duration
		stuck    bool
		findings int
	}{
		{name: "paused holder, plain writes", events: paused, final: 1, unsafe: true, overlap: true, lost: 1, stall: time.Millisecond, findings: 2},
		{name: "paused holder, fenced store", events: fenced, final: 1, fenced: true, overlap: true, stall: time.Millisecond, findings: 1},
		{name: "fenced store accepted a stale write", events: stale, final: 2, fenced: true, unsafe: true, overlap: true, stall: time.Millisecond, findings: 2},
		{name: "killed holder", events: killed, final: 1, stall: 1500 * time.Millisecond, stuck: true, findings: 1},
		{name: "told before overlap", events: told, final: 1, unsafe: true, overlap: true, told: true, before: true, stall: time.Millisecond, findings: 1},
		{name: "gave up", events: gaveUp, stall: 5 * time.Second, stuck: true, findings: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Run(tt.events, tt.final, tt.fenced, time.Second)
			if v.Unsafe != tt.unsafe || v.Overlap != tt.overlap || v.LostUpdates != tt.lost || v.Told != tt.told ||
				v.ToldBeforeOverlap != tt.before || v.MaxStall != tt.stall || v.Stuck != tt.stuck || len(v.Findings) != tt.findings {
				t.Errorf("judge = unsafe %v overlap %v lost %d told %v/%v stall %v stuck %v findings %d %v;\n"+
					"want unsafe %v overlap %v lost %d told %v/%v stall %v stuck %v findings %d",
					v.Unsafe, v.Overlap, v.LostUpdates, v.Told, v.ToldBeforeOverlap, v.MaxStall, v.Stuck, len(v.Findings), v.Findings,
					tt.unsafe, tt.overlap, tt.lost, tt.told, tt.before, tt.stall, tt.stuck, tt.findings)
			}
		})
	}
}

// TestReleasesReportedFailed: an Unlock that returned an error counts as
// a release reported failed; it counts as one that took effect only when
// the harness's read of the lock's servers right after says the token is
// gone (TookEffectPrefix), whatever the error said; neither is unsafe nor
// stuck. A failed release whose token was already gone before it
// (LostBeforePrefix), or is still there (NoEffectPrefix), did not take
// effect; a took-effect note after a release that succeeded is not one.
func TestReleasesReportedFailed(t *testing.T) {
	W, A, E, X, R, N := history.Want, history.Acquire, history.Enter, history.Exit, history.Release, history.Note
	hist := []history.Event{
		// A: its release ran twice (the batch was lost); the second run
		// found nothing and Unlock said "not held"; the key is gone.
		ev(0, "A", W, false, "", 0), ev(1, "A", A, true, "", 0), ev(2, "A", E, false, "", 0), ev(3, "A", X, false, "", 0),
		ev(4, "A", R, false, "redislock: lock not held", 0), ev(5, "A", N, false, TookEffectPrefix+" its token is on none of the lock's servers", 0),
		// B: a release that failed and left the key: not taken effect.
		ev(6, "B", W, false, "", 0), ev(7, "B", A, true, "", 0), ev(8, "B", E, false, "", 0), ev(9, "B", X, false, "", 0),
		ev(10, "B", R, false, "i/o timeout", 0), ev(11, "B", N, false, NoEffectPrefix+" its token is still on 1 of 1 servers", 0),
		// C: its lease had run out before its Unlock, which said so rightly.
		ev(20, "C", W, false, "", 0), ev(21, "C", A, true, "", 0), ev(22, "C", E, false, "", 0), ev(23, "C", X, false, "", 0),
		ev(24, "C", R, false, "lock not held", 0), ev(25, "C", N, false, LostBeforePrefix+" its token was on no server before Unlock", 0),
		// A again: a release that succeeded; a stray took-effect note
		// after it is no failed release.
		ev(30, "A", W, false, "", 0), ev(31, "A", A, true, "", 0), ev(32, "A", E, false, "", 0), ev(33, "A", X, false, "", 0),
		ev(34, "A", R, true, "", 0), ev(35, "A", N, false, TookEffectPrefix+" (stray)", 0),
		// B: a second failed release that took effect, its note after
		// another client's event.
		ev(40, "B", W, false, "", 0), ev(41, "B", A, true, "", 0), ev(42, "B", E, false, "", 0), ev(43, "B", X, false, "", 0),
		ev(44, "B", R, false, "redsync: lock already expired", 0), ev(45, "C", W, false, "", 0),
		ev(46, "B", N, false, TookEffectPrefix+" its token is on none of the lock's servers", 0),
		ev(47, "C", A, true, "", 0), ev(48, "C", E, false, "", 0), ev(49, "C", X, false, "", 0), ev(50, "C", R, true, "", 0),
	}
	v := Run(hist, 0, false, time.Second)
	if v.Releases != 6 || v.ReleasesFailed != 4 || v.FailedTookEffect != 2 {
		t.Errorf("releases %d, reported failed %d, of them took effect %d; want 6, 4, 2", v.Releases, v.ReleasesFailed, v.FailedTookEffect)
	}
	if v.Unsafe || v.Stuck {
		t.Errorf("unsafe %v, stuck %v; a release reported failed that took effect is neither", v.Unsafe, v.Stuck)
	}
	if len(v.Findings) != 0 {
		t.Errorf("findings %v; want none: the timeline's findings are violations, and a release reported failed is none", v.Findings)
	}
}
