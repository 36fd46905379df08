package main

import (
	"github.com/locklab/locklab/bench/registry"
	"io"
	"slices"
	"testing"
	"time"
)

// TestDefaultPlanIsTheVerdictsCells: make bench runs each verdict's
// headline cell of the whole plan (make bench-full), the rtt scenario
// aside, in 3 rounds with the A/A control, and its planned runs fit 6
// minutes with a minute left for starting the servers; -full keeps every
// cell, and explicit cell flags keep what they ask for.
func TestDefaultPlanIsTheVerdictsCells(t *testing.T) {
	plan := func(args ...string) (*config, []cell, []step) {
		t.Helper()
		c, err := parseFlags(args, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		impls, err := registry.Resolve(c.impls)
		if err != nil {
			t.Fatal(err)
		}
		impls = withClientKinds(dropLoneControl(impls, c), c.client)
		cs := cells(c)
		return c, cs, steps(c.rounds, cs, impls)
	}
	def, cs, ss := plan()
	_, fullCells, fullSteps := plan("-full")
	want := slices.DeleteFunc(headlineCells(fullCells), func(c cell) bool { return c.rtt > 0 })
	if !slices.Equal(cs, want) {
		t.Errorf("default cells %v; want the headline cells of -full without rtt, %v", cs, want)
	}
	if def.rounds != defaultRounds || def.rounds < 2 {
		t.Errorf("default rounds %d; want %d (the A/A control needs two or more)", def.rounds, defaultRounds)
	}
	if !slices.ContainsFunc(ss, func(s step) bool { return s.impl.Name == "raw-again" }) {
		t.Error("the default plan runs no raw-again: the A/A control is gone")
	}
	if est := estimate(ss, def.duration); est > 5*time.Minute {
		t.Errorf("default plan: %d runs, planned %v; want at most 5m (6m with the servers' start)", len(ss), est)
	}
	t.Logf("default: %d cells × %d rounds = %d runs, planned %v; -full: %d cells, %d runs, planned %v",
		len(cs), def.rounds, len(ss), estimate(ss, def.duration), len(fullCells), len(fullSteps), estimate(fullSteps, def.duration))
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
