package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/bench/faults"
	"github.com/locklab/locklab/bench/registry"
)

// TestReleaseClaim: a cell's releases reported failed that took effect
// are set against the lock's claim: a claim of none with some measured
// shows, and so does a claim of some with none measured in runs that
// released; a claim that agrees, or no claim, shows nothing.
func TestReleaseClaim(t *testing.T) {
	im := &registry.Lock{Name: "x"}
	sch := faults.ScheduleByID("batch-lost")
	cell := func(took int) *faults.CellResult {
		return &faults.CellResult{Impl: im, Sch: sch, Runs: 20, Releases: 300, ReleasesFailed: took, FailedTookEffect: took}
	}
	none := registry.Claim{Verdict: registry.ClaimSurvives, Why: "scripts answer right run twice"}
	some := registry.Claim{Verdict: registry.ClaimSurvives, Why: "compare-and-delete", FalseFailures: true}
	for _, tt := range []struct {
		name  string
		c     *faults.CellResult
		cl    registry.Claim
		shows string
	}{
		{"claims none, measured some", cell(42), none, "42 of 300 releases reported failed that took effect; its claim says every release"},
		{"claims some, measured none", cell(0), some, "no release reported failed that took effect in 300 releases"},
		{"claims none, measured none", cell(0), none, ""},
		{"claims some, measured some", cell(42), some, ""},
		{"no claim", cell(42), registry.Claim{Verdict: registry.ClaimUnstated}, ""},
	} {
		got := releaseClaim(tt.c, tt.cl)
		if (tt.shows == "") != (got == "") || !strings.Contains(got, tt.shows) {
			t.Errorf("%s: releaseClaim = %q; want a line containing %q (empty: none)", tt.name, got, tt.shows)
		}
	}
}

// TestMergeFaultRun: a run of one schedule alone replaces that schedule's
// rows in the snapshot, keeps every other schedule's, and is recorded with
// its command and date; the README block then names it. A run dir without
// machine.json is an error, and the snapshot is left as it was.
func TestMergeFaultRun(t *testing.T) {
	dir := t.TempDir()
	snap, merges, run := filepath.Join(dir, "faults.json"), filepath.Join(dir, "merged.json"), filepath.Join(dir, "run")
	if err := os.Mkdir(run, 0o755); err != nil {
		t.Fatal(err)
	}
	row := func(impl, fault string, n, runs, unsafe int) faults.FaultRow {
		return faults.FaultRow{Impl: impl, Kind: "ours", Fault: fault, FaultNumber: n, Title: fault + " title", Runs: runs, UnsafeRuns: unsafe}
	}
	old := []faults.FaultRow{row("correct", "pause", 1, 20, 20), row("correct", "batch-lost", 14, 3, 1)}
	// The older rows as an older run wrote them: no releases fields.
	oldText := `[{"impl": "correct", "kind": "ours", "fault": "pause", "fault_number": 1, "title": "pause title", "runs": 20, "unsafe_runs": 20},
		{"impl": "correct", "kind": "ours", "fault": "batch-lost", "fault_number": 14, "title": "batch-lost title", "runs": 3, "unsafe_runs": 1}]`
	if err := os.WriteFile(snap, []byte(oldText), 0o644); err != nil {
		t.Fatal(err)
	}
	fresh := row("correct", "batch-lost", 14, 20, 0)
	fresh.Releases, fresh.ReleasesFailedTookEffect = 300, 2
	if err := WriteJSON(filepath.Join(run, "faults.json"), []faults.FaultRow{fresh}); err != nil {
		t.Fatal(err)
	}
	if _, err := MergeFaultRun(snap, merges, run); err == nil || !strings.Contains(err.Error(), "machine.json") {
		t.Errorf("merge without machine.json: %v; want an error naming it", err)
	}
	start := time.Date(2026, 12, 7, 2, 30, 0, 0, time.UTC)
	if err := WriteJSON(filepath.Join(run, "machine.json"), Machine{Start: start, Command: "bench -scenarios faults -faults batch-lost"}); err != nil {
		t.Fatal(err)
	}
	recs, err := MergeFaultRun(snap, merges, run)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Fault != "batch-lost" || recs[0].Runs != 20 || recs[0].Date != "2026-12-07T02:30:00Z" || recs[0].Command != "bench -scenarios faults -faults batch-lost" {
		t.Errorf("merge records %+v; want batch-lost, 20 runs, its command and date", recs)
	}
	var rows []faults.FaultRow
	if err := readJSON(snap, &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0] != old[0] || rows[1] != fresh {
		t.Errorf("snapshot after merge = %+v; want pause kept and batch-lost replaced", rows)
	}
	if b, _ := os.ReadFile(snap); strings.Count(string(b), `"releases"`) != 1 {
		t.Errorf("snapshot after merge:\n%s\nwant the releases field in the merged row only: a kept row gains no field its run never measured", b)
	}
	block, err := ReadmeFaultBlock(snap, merges)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Column 14 (batch-lost title) is from a run of that schedule alone, `bench -scenarios faults -faults batch-lost`, on 2026-12-07T02:30:00Z, 20 seeded runs a cell",
		"| 0/20; 2 of 300 releases reported failed that took effect |", "| 20/20 |"} {
		if !strings.Contains(block, want) {
			t.Errorf("README block lacks %q:\n%s", want, block)
		}
	}
}
