package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locklab/locklab/bench/registry"
	"github.com/locklab/locklab/bench/report"
	"github.com/locklab/locklab/bench/speed"
)

// runBench runs the program as a user would, with args and -out a new
// temporary directory, and returns that directory and what the program
// printed. If it fails, the test fails with its error and its stderr.
func runBench(t *testing.T, args ...string) (dir, stdout, stderr string) {
	t.Helper()
	dir = t.TempDir()
	var out, errOut bytes.Buffer
	if err := run(t.Context(), append(args, "-out", dir), &out, &errOut); err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, errOut.String())
	}
	return dir, out.String(), errOut.String()
}

// TestEndToEnd runs the program as a user would, small, and checks every
// output file.
func TestEndToEnd(t *testing.T) {
	dir, stdout, stderr := runBench(t,
		"-scenarios", "contended", "-impls", "correct,redsync-1,raw", "-clients", "2",
		"-hold", "0", "-duration", "300ms", "-rounds", "1",
		"-addrs", strings.Join(addrs, ","),
	)
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	rows := checkSchema(t, b, 3)
	for i, want := range []string{"correct", "redsync-1", "raw"} {
		r := rows[i]
		if r["impl"] != want || r["scenario"] != speed.ScContended || r["clients"] != 2.0 {
			t.Errorf("row %d = %v %v N=%v; want %s contended N=2", i, r["impl"], r["scenario"], r["clients"], want)
		}
		if r["ops_per_sec"].(float64) <= 0 || r["violations"] != 0.0 || r["redis_cmds_per_op"].(float64) < 2 {
			t.Errorf("row %d: ops/s %v, violations %v, cmds/op %v; want > 0, 0, >= 2", i, r["ops_per_sec"], r["violations"], r["redis_cmds_per_op"])
		}
		if cpu, ok := r["server_cpu_us_per_op"].(float64); !ok || cpu <= 0 {
			t.Errorf("row %d: server_cpu_us_per_op %v; want a time > 0 (a server did the work)", i, r["server_cpu_us_per_op"])
		}
		// Each acquisition costs this process at least its two round trips'
		// system calls, a few microseconds; a figure under 1µs or over
		// 10ms is a unit or window mistake.
		if cpu, ok := r["client_cpu_us_per_op"].(float64); !ok || cpu < 1 || cpu > 10000 {
			t.Errorf("row %d: client_cpu_us_per_op %v; want 1µs to 10ms", i, r["client_cpu_us_per_op"])
		}
	}
	if rows[0]["ops_ratio"] == nil || rows[0]["ratio_to"] != "redsync-1" {
		t.Errorf("correct's row has ratio %v to %v; want a ratio to redsync-1", rows[0]["ops_ratio"], rows[0]["ratio_to"])
	}
	if rows[0]["ops_floor_ratio"] == nil || rows[0]["floor_to"] != "raw" || rows[0]["fifo_floor_us"].(float64) <= 0 {
		t.Errorf("correct's row has floor ratio %v to %v, FIFO floor %v; want a ratio to raw and a FIFO floor",
			rows[0]["ops_floor_ratio"], rows[0]["floor_to"], rows[0]["fifo_floor_us"])
	}
	for _, f := range []string{
		"report.md", "machine.json",
		"hgrm/contended_c2_h0_correct.hgrm", "hgrm/contended_c2_h0_redsync-1.hgrm",
		"plots/latency_contended_c2_h0.png", "plots/latency_contended_c2_h0.svg",
		"plots/cmds_contended_h0.png", "plots/cmds_contended_h0.svg",
	} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: missing or empty (%v)", f, err)
		}
	}
	reportMD, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	for _, want := range []string{"GOMAXPROCS", "redis-server 7", "github.com/go-redsync/redsync/v4", "| correct | 2 |",
		"| × redsync | × floor |", "| FIFO floor | p99 × floor |", "| server CPU/acq | client CPU/acq |", "redis-benchmark -c 2 SET"} {
		if !bytes.Contains(reportMD, []byte(want)) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	// The verdicts open it: one sentence per job in its first 40 lines,
	// before the appendix.
	lines := strings.SplitN(string(reportMD), "\n", 41)
	first40 := strings.Join(lines[:min(40, len(lines))], "\n")
	for _, want := range []string{"## Verdicts", "- One key under contention (contended, 2 clients, hold 0): pick ", "- Many keys: no verdict",
		"- No contention: no verdict", "- Five servers", "- Beyond Redis"} {
		if !strings.Contains(first40, want) {
			t.Errorf("report.md's first 40 lines lack %q:\n%s", want, first40)
		}
	}
	if v, a := bytes.Index(reportMD, []byte("## Verdicts")), bytes.Index(reportMD, []byte("## Appendix")); v < 0 || a < v {
		t.Errorf("report.md: verdicts at %d, appendix at %d; want the verdicts first", v, a)
	}
	// The summary comes first in the appendix, before the machine and the tables.
	sum, mach := bytes.Index(reportMD, []byte("## Summary")), bytes.Index(reportMD, []byte("## Machine"))
	if sum < 0 || mach < sum || !bytes.Contains(reportMD[sum:mach], []byte("| contended, 2 clients, hold 0 | wait p99 ↓ |")) {
		t.Errorf("report.md does not open with the summary:\n%s", reportMD)
	}
	var m report.Machine
	mb, _ := os.ReadFile(filepath.Join(dir, "machine.json"))
	if err := json.Unmarshal(mb, &m); err != nil || m.RedisBenchmark == nil {
		t.Fatalf("machine.json: %v, %s", err, mb)
	}
	if r, ok := m.RedisBenchmark.Rate(2); m.RedisBenchmark.Binary != "" && (!ok || r.PerSec <= 0) {
		t.Errorf("machine.json has no redis-benchmark rate at 2 clients: %s", mb)
	}
	hgrm, _ := os.ReadFile(filepath.Join(dir, "hgrm/contended_c2_h0_correct.hgrm"))
	if !bytes.Contains(hgrm, []byte("1/(1-Percentile)")) || !bytes.Contains(hgrm, []byte("#[Mean")) {
		t.Errorf("hgrm file is not in PercentilesPrint format:\n%s", hgrm)
	}
	if !strings.Contains(stdout, "report:  "+filepath.Join(dir, "report.md")) {
		t.Errorf("stdout does not name the report:\n%s", stdout)
	}
	if !strings.Contains(stderr, "[1/3] contended c=2 hold=0") {
		t.Errorf("stderr lacks the plain progress line:\n%s", stderr)
	}
}

// TestOpenLoop runs one client at a rate it cannot keep up with (each
// acquisition holds 2ms, 1000 arrivals/s) and one it can.
func TestOpenLoop(t *testing.T) {
	for _, tt := range []struct {
		rate, hold string
		saturated  bool
	}{
		{"1000", "2ms", true},
		{"50", "0", false},
	} {
		dir, _, _ := runBench(t,
			"-scenarios", "contended", "-impls", "correct", "-clients", "1", "-hold", tt.hold,
			"-rate", tt.rate, "-duration", "300ms", "-rounds", "1", "-addrs", strings.Join(addrs, ","),
			"-plots=false",
		)
		b, _ := os.ReadFile(filepath.Join(dir, "summary.json"))
		rows := checkSchema(t, b, 1)
		if rows[0]["mode"] != "open" || rows[0]["saturated"] != tt.saturated {
			t.Errorf("rate %s hold %s: mode %v saturated %v; want open, %v", tt.rate, tt.hold, rows[0]["mode"], rows[0]["saturated"], tt.saturated)
		}
		// Saturated, about half the arrivals were still unserved at the end:
		// they are waits cut off by it. Otherwise one is in flight, or a
		// few more when a loaded machine stalls the client past an arrival
		// or two (20ms apart) as the run ends: 2 were seen at load 12.
		if cut := rows[0]["cut_off"].(float64); tt.saturated && cut < 50 || !tt.saturated && cut > 3 {
			t.Errorf("rate %s hold %s: %v waits cut off; want %s", tt.rate, tt.hold, cut, map[bool]string{true: ">= 50", false: "<= 3"}[tt.saturated])
		}
	}
}

func TestBadFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-scenarios", "nope"}, `unknown scenario "nope"`},
		{[]string{"-impls", "nope"}, `unknown implementation "nope"`},
		{[]string{"-clients", "0"}, "out of range"},
		{[]string{"-clients", "2,,8"}, "empty entry"},
		{[]string{"-hold", "1"}, "not a duration"},
		{[]string{"-duration", "0s"}, "-duration must be > 0"},
		{[]string{"-rounds", "0"}, "-rounds must be >= 1"},
		{[]string{"-rate", "-1"}, "-rate must be >= 0"},
		{[]string{"-check", "maybe"}, "-check must be async or sync"},
		{[]string{"-impls", "redsync-5", "-addrs", "127.0.0.1:1"}, "need 5"},
		{[]string{"extra"}, "unexpected arguments"},
	}
	for _, tt := range tests {
		err := run(t.Context(), append(tt.args, "-out", t.TempDir()), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("run(%q) = %v; want an error containing %q", tt.args, err, tt.want)
		}
	}
	if err := run(t.Context(), []string{"-h"}, io.Discard, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("run(-h) = %v; want flag.ErrHelp", err)
	}
}

// TestNaiveViolationsCounted checks that the ledger catches a lock that lets
// two holders in: naive.GetThenSet, whose GET and SET two waiters can
// interleave. The race is real, not staged, so the test allows a few runs
// to see one; with 8 clients polling every 5ms it shows in every run here.
func TestNaiveViolationsCounted(t *testing.T) {
	if _, ok := registry.Locks["naive-getset"]; !ok {
		t.Skip("package naive has no GetThenSet in this build")
	}
	for _, check := range []string{"async", "sync"} {
		t.Run(check, func(t *testing.T) {
			for attempt := 1; attempt <= 5; attempt++ {
				dir, _, _ := runBench(t,
					"-scenarios", "contended", "-impls", "naive-getset", "-clients", "8", "-hold", "1ms",
					"-duration", "300ms", "-rounds", "1", "-addrs", strings.Join(addrs, ","),
					"-plots=false", "-check", check,
				)
				b, _ := os.ReadFile(filepath.Join(dir, "summary.json"))
				rows := checkSchema(t, b, 1)
				if v := rows[0]["violations"].(float64); v > 0 {
					t.Logf("attempt %d: %v violations in %v acquisitions", attempt, v, rows[0]["acquisitions"])
					return
				}
			}
			t.Error("naive-getset showed no violation in 5 runs of 8 clients: the ledger went blind")
		})
	}
}

// TestCutOffWaitsCount holds the lock past the end of the run, so the
// second client waits the whole run and never gets it. Its wait must still
// show in the wait figures, at its length when the run ended: a bench that
// dropped it would report only the first client's short wait.
func TestCutOffWaitsCount(t *testing.T) {
	const run300 = 300e3 // µs
	dir, _, _ := runBench(t,
		"-scenarios", "contended", "-impls", "correct", "-clients", "2", "-hold", "600ms",
		"-duration", "300ms", "-rounds", "1", "-addrs", strings.Join(addrs, ","),
		"-plots=false",
	)
	b, _ := os.ReadFile(filepath.Join(dir, "summary.json"))
	r := checkSchema(t, b, 1)[0]
	if r["acquisitions"] != 1.0 || r["cut_off"] != 1.0 {
		t.Fatalf("acquisitions %v, cut off %v; want 1 and 1 (the second client waited the whole run)", r["acquisitions"], r["cut_off"])
	}
	for _, f := range []string{"cut_off_max_us", "wait_max_us"} {
		if v := r[f].(float64); v < 0.9*run300 || v > 2*run300 {
			t.Errorf("%s = %.0f µs; want about the run's 300ms", f, v)
		}
	}
}
