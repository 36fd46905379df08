package main

import (
	"io"
	"slices"
	"testing"
	"time"

	"github.com/locklab/locklab/bench/registry"
	"github.com/locklab/locklab/bench/speed"
)

// TestDefaultPlanIsTheVerdictsCells: make bench runs each verdict's
// headline cell of the whole plan (make bench-full), the rtt scenario
// aside, in 3 rounds with the A/A control, and its planned runs fit 6
// minutes with a minute left for starting the servers; -full keeps every
// cell, and explicit cell flags keep what they ask for.
func TestDefaultPlanIsTheVerdictsCells(t *testing.T) {
	plan := func(args ...string) (*speed.Config, []speed.Cell, []speed.Step) {
		t.Helper()
		c, err := parseFlags(args, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		impls, err := registry.Resolve(c.Impls)
		if err != nil {
			t.Fatal(err)
		}
		impls = speed.WithClientKinds(speed.DropLoneControl(impls, c), c.Client)
		cs := speed.Cells(c)
		return c, cs, speed.Steps(c.Rounds, cs, impls)
	}
	def, cs, ss := plan()
	_, fullCells, fullSteps := plan("-full")
	want := slices.DeleteFunc(speed.HeadlineCells(fullCells), func(c speed.Cell) bool { return c.Rtt > 0 })
	if !slices.Equal(cs, want) {
		t.Errorf("default cells %v; want the headline cells of -full without rtt, %v", cs, want)
	}
	if def.Rounds != speed.DefaultRounds || def.Rounds < 2 {
		t.Errorf("default rounds %d; want %d (the A/A control needs two or more)", def.Rounds, speed.DefaultRounds)
	}
	if !slices.ContainsFunc(ss, func(s speed.Step) bool { return s.Impl.Name == "raw-again" }) {
		t.Error("the default plan runs no raw-again: the A/A control is gone")
	}
	if est := speed.Estimate(ss, def.Duration); est > 5*time.Minute {
		t.Errorf("default plan: %d runs, planned %v; want at most 5m (6m with the servers' start)", len(ss), est)
	}
	t.Logf("default: %d cells × %d rounds = %d runs, planned %v; -full: %d cells, %d runs, planned %v",
		len(cs), def.Rounds, len(ss), speed.Estimate(ss, def.Duration), len(fullCells), len(fullSteps), speed.Estimate(fullSteps, def.Duration))
	if len(fullCells) <= len(cs) {
		t.Errorf("-full runs %d cells, the default %d", len(fullCells), len(cs))
	}
	if _, got, _ := plan("-clients", "8"); len(got) != 1+2+2+3 {
		// uncontended; contended at 8 and keys at 64, each x 2 holds; rtt-uncontended and rtt-contended x 2 holds.
		t.Errorf("-clients 8: %d cells %v; an explicit cell flag runs every scenario's cells", len(got), got)
	}
	if _, err := parseFlags([]string{"-full", "-quick"}, io.Discard); err == nil {
		t.Error("-full -quick: nil error")
	}
}
