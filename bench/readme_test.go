package main

import (
	"errors"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/locklab/locklab/bench/report"
)

var updateReadme = flag.Bool("update", false, "rewrite README.md's generated blocks (bench, faults) from bench/testdata/readme")

var mergeFaults = flag.String("merge-faults", "", "with -update: merge the fault scoreboard's run in `dir` (a run of some schedules alone: its faults.json and machine.json) into bench/testdata/readme/faults.json, replacing those schedules' rows and keeping the others, and record the run in faults_merged.json")

// TestReadmeBenchBlock: README.md's bench block (between <!-- bench:begin
// --> and <!-- bench:end -->) is what the run checked in under
// testdata/readme gives; with -update it rewrites the block.
func TestReadmeBenchBlock(t *testing.T) {
	want, err := report.ReadmeBenchBlock(report.ReadmeSnapshot)
	if err != nil {
		t.Fatal(err)
	}
	checkReadme(t, report.ReadmeBegin, report.ReadmeEnd, want, "TestReadmeBenchBlock", report.ReadmeSnapshot)
}

// checkReadme fails t when README.md's text between begin and end is not
// want (made from the snapshot by test); with -update it rewrites it.
func checkReadme(t *testing.T, begin, end, want, test, snapshot string) {
	t.Helper()
	const path = "../README.md"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if *updateReadme {
		out, err := report.ReplaceBetween(string(b), begin, end, want)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := report.BlockBetween(string(b), begin, end)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("README.md between %s and %s differs from what bench/%s gives: run go test ./bench -run '^%s$' -update\n--- got:\n%s--- want:\n%s", begin, end, snapshot, test, got, want)
	}
}

// TestReadmeBlockMarkers: a README without both markers is a clear error,
// and a replaced block keeps the text around it.
func TestReadmeBlockMarkers(t *testing.T) {
	for _, s := range []string{"", "a " + report.ReadmeBegin + " b", "a " + report.ReadmeEnd + " b"} {
		if _, err := report.ReadmeBlock(s); !errors.Is(err, report.ErrNoReadmeBlock) {
			t.Errorf("readmeBlock(%q) = %v; want errNoReadmeBlock", s, err)
		}
		if _, err := report.ReplaceReadmeBlock(s, "x"); !errors.Is(err, report.ErrNoReadmeBlock) {
			t.Errorf("replaceReadmeBlock(%q) = %v; want errNoReadmeBlock", s, err)
		}
	}
	in := "head\n" + report.ReadmeBegin + "\nold\n" + report.ReadmeEnd + "\ntail\n"
	out, err := report.ReplaceReadmeBlock(in, "\nnew\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := "head\n" + report.ReadmeBegin + "\nnew\n" + report.ReadmeEnd + "\ntail\n"; out != want {
		t.Errorf("replaceReadmeBlock = %q; want %q", out, want)
	}
	if got, _ := report.ReadmeBlock(out); got != "\nnew\n" {
		t.Errorf("readmeBlock after replace = %q", got)
	}
}

// TestVerdictSectionOpensWithVerdicts: the section report.md opens with
// has one sentence per job, the same as htmlreport's, before any table.
func TestVerdictSectionOpensWithVerdicts(t *testing.T) {
	const dir = "htmlreport/testdata/results"
	block, err := report.ReadmeBenchBlock(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + block)
	lines := strings.Split(block, "\n")
	var sentences int
	for i, ln := range lines {
		if strings.HasPrefix(ln, "|") && sentences < 5 {
			t.Fatalf("line %d is a table before the five verdicts: %q", i+1, ln)
		}
		if strings.HasPrefix(ln, "- ") {
			sentences++
		}
	}
	if sentences != 5 {
		t.Errorf("%d verdict sentences; want 5 (one per job)", sentences)
	}
}

// TestReadmeFaultBlock: README.md's fault tables (between <!-- faults:begin
// --> and <!-- faults:end -->) are what the faults.json checked in under
// testdata/readme gives; with -update it rewrites them.
//
// With -merge-faults DIR -update it first merges the run in DIR into the
// snapshot (report.MergeFaultRun): how one schedule's column is measured
// again without the whole make faults.
func TestReadmeFaultBlock(t *testing.T) {
	if *mergeFaults != "" {
		if !*updateReadme {
			t.Fatal("-merge-faults rewrites the snapshot: give -update too")
		}
		recs, err := report.MergeFaultRun(report.ReadmeFaultSnapshot, report.ReadmeFaultMerges, *mergeFaults)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("merged into %s: %+v", report.ReadmeFaultSnapshot, recs)
	}
	want, err := report.ReadmeFaultBlock(report.ReadmeFaultSnapshot, report.ReadmeFaultMerges)
	if err != nil {
		t.Fatal(err)
	}
	checkReadme(t, report.ReadmeFaultBegin, report.ReadmeFaultEnd, want, "TestReadmeFaultBlock", report.ReadmeFaultSnapshot)
}
