package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locklab/locklab/bench/faults"
	"github.com/locklab/locklab/bench/registry"
)

// TestFaultsEndToEnd runs the scoreboard as make faults does, small: two
// schedules with real processes (the holder frozen with SIGSTOP, the holder
// killed with SIGKILL), one run each, for a lock that survives both with
// its fenced store, one whose doc names the pause, and the naive lock
// whose mistake shows when two waiters find the dead holder's key gone.
// The scoreboard must catch what it should and pass what it should: a
// scoreboard that reports nothing unsafe is blind.
func TestFaultsEndToEnd(t *testing.T) {
	dir, stdout, _ := runBench(t,
		"-scenarios", "faults", "-faults", "pause,kill", "-fault-runs", "1",
		"-impls", "fencing,correct,naive-getset",
	)
	b, err := os.ReadFile(filepath.Join(dir, "faults.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rows []faults.FaultRow
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 6 {
		t.Fatalf("faults.json has %d rows; want 6 (3 locks x 2 schedules):\n%s", len(rows), b)
	}
	got := map[string]faults.FaultRow{}
	for _, r := range rows {
		got[r.Impl+"/"+r.Fault] = r
		if r.Runs+r.Inconclusive != 1 {
			t.Errorf("%s/%s: %d runs + %d inconclusive; want 1 in all", r.Impl, r.Fault, r.Runs, r.Inconclusive)
		}
	}
	check := func(key string, unsafe, stuck int) {
		t.Helper()
		r := got[key]
		if r.Runs != 1 || r.UnsafeRuns != unsafe || r.StuckRuns != stuck {
			t.Errorf("%s: %d/%d unsafe, %d stuck; want %d unsafe, %d stuck (inconclusive: %s)\n%s",
				key, r.UnsafeRuns, r.Runs, r.StuckRuns, unsafe, stuck, r.InconclusiveWhy, timelineOf(t, dir, r))
		}
		if (unsafe > 0 || stuck > 0) && r.Timeline == "" {
			t.Errorf("%s: unsafe but no timeline linked", key)
		}
	}
	check("fencing/pause", 0, 0)     // the store refuses the paused holder's write
	check("correct/pause", 1, 0)     // named in its claims
	check("correct/kill", 0, 0)      // the next holder gets in after the lease
	check("naive-getset/kill", 1, 0) // two waiters both take the freed key
	if r := got["fencing/pause"]; r.Violations != 1 {
		t.Errorf("fencing/pause: %d runs with overlapping critical sections; want 1 (the store, not the lock, kept it safe)", r.Violations)
	}
	if r := got["correct/pause"]; r.Claim != registry.ClaimNamed || r.Timeline == "" {
		t.Errorf("correct/pause: claim %q, timeline %q; want named, a timeline", r.Claim, r.Timeline)
	}
	tl := timelineOf(t, dir, got["correct/pause"])
	for _, want := range []string{"SIGSTOP A", "SIGCONT A", "A and B both in the critical section", "verdict: UNSAFE"} {
		if !strings.Contains(tl, want) {
			t.Errorf("correct/pause timeline lacks %q:\n%s", want, tl)
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, "faults.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| lock | 1. holder paused past its lease | 9. holder killed |",
		"| fencing | 0/1 | 0/1 |",
		"[1/1 runs unsafe](" + got["correct/pause"].Timeline + ") (named)",
		"## Against the claims",
		"- naive-getset under 9. holder killed: 1/1 runs unsafe, caught",
	} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("faults.md lacks %q:\n%s", want, md)
		}
	}
	for _, f := range []string{"faults_heatmap.png", "faults_heatmap.svg", "machine.json"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: missing or empty (%v)", f, err)
		}
	}
	if !strings.Contains(stdout, "faults:  "+filepath.Join(dir, "faults.md")) {
		t.Errorf("stdout does not name faults.md:\n%s", stdout)
	}
}

func timelineOf(t *testing.T, dir string, r faults.FaultRow) string {
	t.Helper()
	if r.Timeline == "" {
		return "(no timeline)"
	}
	b, err := os.ReadFile(filepath.Join(dir, r.Timeline))
	if err != nil {
		t.Errorf("timeline %s: %v", r.Timeline, err)
	}
	return string(b)
}
