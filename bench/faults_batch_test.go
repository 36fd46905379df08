package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locklab/locklab/bench/faults"
)

// TestFaultsBatchLost runs schedule 14 (a batch of the AutoPipeliner that
// A, B and C share, lost and sent again) as make faults does, small: our
// lock must come out safe and live; naive-setnx-expire, whose SETNX sent
// again answers "taken" to the client that took the lock, so that no
// EXPIRE follows and the key never expires, must be caught stuck, with a
// timeline that shows the lost batches; rueidislock, whose API takes no
// AutoPipeliner, must not run and its cell must say why. A schedule that
// passes every lock is blind.
func TestFaultsBatchLost(t *testing.T) {
	dir, _, stderr := runBench(t,
		"-scenarios", "faults", "-faults", "batch-lost", "-fault-runs", "3",
		"-impls", "correct,rueidislock,naive-setnx-expire",
	)
	b, err := os.ReadFile(filepath.Join(dir, "faults.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rows []faults.FaultRow
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatal(err)
	}
	got := map[string]faults.FaultRow{}
	for _, r := range rows {
		got[r.Impl] = r
	}
	if r := got["correct"]; r.Runs != 3 || r.UnsafeRuns != 0 || r.StuckRuns != 0 {
		t.Errorf("correct: %d/%d unsafe, %d stuck, %d inconclusive (%s); want 3 runs judged, none unsafe or stuck\n%s",
			r.UnsafeRuns, r.Runs, r.StuckRuns, r.Inconclusive, r.InconclusiveWhy, timelineOf(t, dir, r))
	}
	// The releases are counted, and ours, whose scripts answer right when
	// run twice, has none reported failed that took effect.
	if r := got["correct"]; r.Releases < r.Runs || r.ReleasesFailed != 0 || r.ReleasesFailedTookEffect != 0 {
		t.Errorf("correct: %d releases, %d reported failed, %d of them took effect; want one release a run at least, none failed",
			r.Releases, r.ReleasesFailed, r.ReleasesFailedTookEffect)
	}
	r := got["naive-setnx-expire"]
	if r.Runs != 3 || r.StuckRuns == 0 || r.Timeline == "" {
		t.Errorf("naive-setnx-expire: %d/%d stuck, %d inconclusive (%s), timeline %q; want stuck in a run of 3, with its timeline",
			r.StuckRuns, r.Runs, r.Inconclusive, r.InconclusiveWhy, r.Timeline)
	} else if tl := timelineOf(t, dir, r); !strings.Contains(tl, "the AutoPipeliner sends it again") || !strings.Contains(tl, "verdict: STUCK") {
		t.Errorf("naive-setnx-expire's timeline shows no lost batch or no verdict:\n%s", tl)
	}
	if r := got["rueidislock"]; r.Runs != 0 || !strings.Contains(r.NotRun, "takes no go-redis AutoPipeliner") {
		t.Errorf("rueidislock: %d runs, not_run %q; want not run, saying its API takes no AutoPipeliner", r.Runs, r.NotRun)
	}
	if !strings.Contains(stderr, "rueidislock not run: its API takes no go-redis AutoPipeliner") {
		t.Errorf("the progress (stderr) does not say why rueidislock is not run:\n%s", stderr)
	}
}
