package htmlreport

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rw builds a summary row with per-round ops/s.
func rw(impl, sc string, clients, nodes int, ops ...float64) row {
	r := row{Impl: impl, Scenario: sc, Clients: clients, HoldUs: 1000, Keys: 1, Nodes: nodes}
	if sc == "uncontended" {
		r.HoldUs, r.Keys = 0, 0
	}
	for i, v := range ops {
		r.PerRound = append(r.PerRound, struct {
			Round     int     `json:"round"`
			OpsPerSec float64 `json:"ops_per_sec"`
		}{i, v})
	}
	r.OpsPerSec = median(ops)
	return r
}

func median(xs []float64) float64 {
	s := append([]float64{}, xs...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func withFloor(r row, floor string, ratio float64) row {
	r.FloorTo, r.OpsFloorRatio = floor, &ratio
	return r
}

var testLocks = map[string]Lock{
	"correct":   {"correct", KindOurs, 1, "redis"},
	"watchdog":  {"watchdog", KindOurs, 1, "redis"},
	"redlock-5": {"redlock-5", KindOurs, 5, "redis"},
	"redsync-1": {"redsync-1", KindPeer, 1, "redis"},
	"redsync-5": {"redsync-5", KindPeer, 5, "redis"},
	"raw":       {"raw", KindFloor, 1, "redis"},
	"raw-again": {"raw-again", KindFloor, 1, "redis"},
	"etcdlock":  {"etcdlock", KindOurs, 1, "etcd"},
	"naive":     {"naive", KindNaive, 1, "redis"},
}

func testLock(name string) Lock { return testLocks[name] }

func TestVerdicts(t *testing.T) {
	// The A/A control: raw-again over raw is 0.95, 1.00, 1.05 in the
	// three rounds, so a lead within 5% is a tie.
	aa := []row{rw("raw", "contended", 8, 1, 1000, 1000, 1000), rw("raw-again", "contended", 8, 1, 950, 1000, 1050)}
	tests := []struct {
		name  string
		rows  []row
		job   string
		want  Verdict
		words []string // in the sentence
	}{
		{
			name: "ours ahead beyond the spread",
			rows: append([]row{withFloor(rw("correct", "contended", 8, 1, 900, 880, 910), "raw", 0.9),
				rw("watchdog", "contended", 8, 1, 700, 700, 700), rw("redsync-1", "contended", 8, 1, 600, 640, 620)}, aa...),
			job:   "One key under contention",
			want:  Verdict{Pick: "correct", PickKind: KindOurs, Rival: "redsync-1", Floor: "raw", FloorRatio: 0.9, AALo: 0.95, AAHi: 1.05},
			words: []string{"pick correct", "900 acq/s", "1.47× the best peer, redsync-1", "0.90× the floor, raw"},
		},
		{
			name: "a tie inside the A/A spread",
			rows: append([]row{rw("correct", "contended", 8, 1, 1000, 1000, 1000),
				rw("redsync-1", "contended", 8, 1, 980, 990, 1000)}, aa...),
			job:   "One key under contention",
			want:  Verdict{Pick: "correct", PickKind: KindOurs, Rival: "redsync-1", Tie: true, AALo: 0.95, AAHi: 1.05},
			words: []string{"a tie, inside this run's A/A spread (0.95–1.05×)"},
		},
		{
			name: "a peer ahead is the pick",
			rows: append([]row{rw("correct", "contended", 8, 1, 500, 500, 500),
				rw("redsync-1", "contended", 8, 1, 1000, 1000, 1000)}, aa...),
			job:   "One key under contention",
			want:  Verdict{Pick: "redsync-1", PickKind: KindPeer, Rival: "correct", AALo: 0.95, AAHi: 1.05},
			words: []string{"pick redsync-1 (a peer's)", "our best, correct, is 0.50× it"},
		},
		{
			name: "a lock with violations is never the pick",
			rows: func() []row {
				bad := rw("correct", "contended", 8, 1, 5000)
				bad.Violations = 3
				return []row{bad, rw("redsync-1", "contended", 8, 1, 1000)}
			}(),
			job:  "One key under contention",
			want: Verdict{Pick: "redsync-1", PickKind: KindPeer},
		},
		{
			name:  "the headline cell has the most clients",
			rows:  []row{rw("correct", "contended", 2, 1, 5000), rw("correct", "contended", 8, 1, 800)},
			job:   "One key under contention",
			want:  Verdict{Pick: "correct", PickKind: KindOurs, Cell: "contended, 8 clients, hold 1ms"},
			words: []string{"no peer ran"},
		},
		{
			name: "five servers compares five-node locks only",
			rows: []row{rw("correct", "contended", 8, 1, 5000), rw("redlock-5", "contended", 8, 5, 400),
				rw("redsync-5", "contended", 8, 5, 200)},
			job:  "Five servers",
			want: Verdict{Pick: "redlock-5", PickKind: KindOurs, Rival: "redsync-5"},
		},
		{
			name: "beyond Redis compares locks on other systems only",
			rows: []row{rw("correct", "contended", 8, 1, 5000), rw("etcdlock", "contended", 8, 1, 80)},
			job:  "Beyond Redis",
			want: Verdict{Pick: "etcdlock", PickKind: KindOurs},
		},
		{
			name:  "a scenario that did not run has no verdict",
			rows:  []row{rw("correct", "contended", 8, 1, 5000)},
			job:   "Many keys",
			want:  Verdict{Missing: "the keys scenario did not run"},
			words: []string{"Many keys: no verdict, the keys scenario did not run."},
		},
		{
			name:  "no lock on another system",
			rows:  []row{rw("correct", "contended", 8, 1, 5000)},
			job:   "Beyond Redis",
			want:  Verdict{Missing: "no lock on etcd, ZooKeeper or PostgreSQL ran"},
			words: []string{"no verdict"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got Verdict
			for _, v := range verdicts(tt.rows, testLock) {
				if v.Job == tt.job {
					got = v
				}
			}
			if got.Pick != tt.want.Pick || got.PickKind != tt.want.PickKind || got.Rival != tt.want.Rival ||
				got.Tie != tt.want.Tie || got.Missing != tt.want.Missing || got.Floor != tt.want.Floor ||
				got.FloorRatio != tt.want.FloorRatio || got.AALo != tt.want.AALo || got.AAHi != tt.want.AAHi {
				t.Errorf("verdict = %+v; want %+v", got, tt.want)
			}
			if tt.want.Cell != "" && got.Cell != tt.want.Cell {
				t.Errorf("Cell = %q; want %q", got.Cell, tt.want.Cell)
			}
			s := got.Sentence()
			for _, w := range tt.words {
				if !strings.Contains(s, w) {
					t.Errorf("Sentence() = %q; want it to hold %q", s, w)
				}
			}
		})
	}
}

// TestVerdictRatioDirection: with two rounds, ours over the peer is
// (1.11 + 0.07) / 2 = 0.59 (report.md's figure), while the peer over ours
// would be (0.90 + 13.8) / 2 = 7.35; the verdict keeps report.md's
// direction when the peer is the pick (redlock-5 and redsync-5, from a
// real run).
func TestVerdictRatioDirection(t *testing.T) {
	rows := []row{rw("redlock-5", "contended", 8, 5, 623.97, 19.98), rw("redsync-5", "contended", 8, 5, 561.82, 275.70)}
	v := verdictFor(jobs[3], rows, testLock)
	if v.Pick != "redsync-5" || math.Abs(v.OursRatio-0.59) > 0.005 {
		t.Errorf("verdict = %s (OursRatio %v); want redsync-5 with our best at 0.59×", v.Sentence(), v.OursRatio)
	}
}

func TestSameRoundRatio(t *testing.T) {
	// Same-round ratios 2, 0.5, 1: their median is 1, while the ratio of
	// the medians would be 1.5.
	a := rw("a", "contended", 8, 1, 200, 100, 300)
	b := rw("b", "contended", 8, 1, 100, 200, 300)
	if got := sameRoundRatio(a, b); got != 1 {
		t.Errorf("sameRoundRatio = %v; want 1", got)
	}
}

func TestFmtOps(t *testing.T) {
	for in, want := range map[float64]string{7: "7", 707.4: "707", 17856: "17,856", 1234567: "1,234,567"} {
		if got := fmtOps(in); got != want {
			t.Errorf("fmtOps(%v) = %q; want %q", in, got, want)
		}
	}
}

// TestVerdictsAgreeWithReportMD checks the verdicts of the fixed run
// against the summary report.md opens with: the pick's figure as its
// leader cell prints it, and our lock's ratio to the best peer and to the
// floor as its column prints them ("1.02× (ahead 1/2) · 1.05×").
func TestVerdictsAgreeWithReportMD(t *testing.T) {
	dir := "testdata/results"
	res, err := load(dir)
	if err != nil {
		t.Fatal(err)
	}
	vs, err := Verdicts(dir)
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	summary, _, _ := strings.Cut(string(md), "## Every cell")
	checked := 0
	if len(vs) != len(jobs) {
		t.Fatalf("Verdicts = %d verdicts; want %d", len(vs), len(jobs))
	}
	for _, v := range vs {
		if v.Missing != "" || v.Rival == "" || v.Floor == "" || res.lock(v.Pick).System != "redis" {
			continue
		}
		ours := v.Pick
		if v.PickKind == KindPeer {
			ours = v.Rival
		}
		// The summary's line for the cell names the leader with its figure.
		leader := fmt.Sprintf("| %s | acq/s ↑ | %s %.0f |", v.Cell, v.Pick, v.Figure)
		if v.Unit == "pairs/s" {
			leader = fmt.Sprintf("| %s | pairs/s ↑ | %s %.0f |", v.Cell, v.Pick, v.Figure)
		}
		line := ""
		for _, l := range strings.Split(summary, "\n") {
			if strings.HasPrefix(l, leader) {
				line = l
			}
		}
		want := []string{fmt.Sprintf("%.2f× (ahead", v.OursRatio)}
		if v.PickKind == KindOurs {
			want = append(want, fmt.Sprintf("· %.2f×", v.FloorRatio))
		}
		for _, w := range want {
			if line == "" || !strings.Contains(line, w) {
				t.Errorf("%s\nreport.md's summary line %q lacks %q (our lock %s)", v.Sentence(), line, w, ours)
			}
		}
		checked++
	}
	if checked < 3 {
		t.Errorf("checked %d verdicts against report.md; want at least 3", checked)
	}
}

// TestServerKinds: with -server redis,valkey every cell ran on both kinds;
// the verdicts are the first kind's, and the tables come per kind.
func TestServerKinds(t *testing.T) {
	on := func(r row, server string) row { r.Server = server; return r }
	rows := []row{
		on(rw("correct", "contended", 8, 1, 900), "redis"), on(rw("redsync-1", "contended", 8, 1, 800), "redis"),
		on(rw("correct", "contended", 8, 1, 100), "valkey"), on(rw("redsync-1", "contended", 8, 1, 5000), "valkey"),
	}
	v := verdicts(rows, testLock)[0]
	if v.Pick != "correct" || v.Cell != "contended, 8 clients, hold 1ms on redis" {
		t.Errorf("verdict = %s; want correct, on redis", v.Sentence())
	}
	res := &results{rows: rows}
	for _, l := range testLocks {
		res.locks = append(res.locks, l)
	}
	var titles []string
	for _, tb := range res.tables() {
		titles = append(titles, tb.Title)
		if len(tb.Rows) != 2 {
			t.Errorf("table %q has %d rows; want 2 (one kind of server)", tb.Title, len(tb.Rows))
		}
	}
	if got, want := strings.Join(titles, "; "), "contended, 8 clients, hold 1ms on redis; contended, 8 clients, hold 1ms on valkey"; got != want {
		t.Errorf("tables = %q; want %q", got, want)
	}
}

// TestVerdictsOfMatchesVerdicts: report.md's verdicts, computed from the
// rows before locks.json is written, are report.html's.
func TestVerdictsOfMatchesVerdicts(t *testing.T) {
	dir := filepath.Join("testdata", "results")
	want, err := Verdicts(dir)
	if err != nil {
		t.Fatal(err)
	}
	summary, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var locks []Lock
	if err := readJSON(filepath.Join(dir, locksFile), &locks); err != nil {
		t.Fatal(err)
	}
	got, err := VerdictsOf(summary, locks)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("VerdictsOf = %+v; Verdicts(%s) = %+v", got, dir, want)
	}
	if _, err := VerdictsOf([]byte("{not json"), locks); err == nil {
		t.Error("VerdictsOf of bad JSON: nil error")
	}
}

// TestBetterUnderContention: on a contended cell the pick among locks
// within 10% of the fastest is the one whose waiters wait least; a lock
// further behind loses however short its waits; elsewhere throughput
// alone decides.
func TestBetterUnderContention(t *testing.T) {
	fencing := &row{Impl: "fencing", OpsPerSec: 837, WaitP99Us: 360_200}
	correct := &row{Impl: "correct", OpsPerSec: 793, WaitP99Us: 42_900}
	slow := &row{Impl: "slow", OpsPerSec: 500, WaitP99Us: 10_000}
	better := betterFor(true, 837)
	if !better(correct, fencing) || better(fencing, correct) {
		t.Errorf("contended: correct (793/s, p99 42.9ms) against fencing (837/s, p99 360ms): want correct")
	}
	if !better(correct, slow) || better(slow, correct) {
		t.Errorf("contended: a lock at 500/s (under 90%% of 837) beat correct on its p99")
	}
	plain := betterFor(false, 837)
	if !plain(fencing, correct) {
		t.Errorf("uncontended: throughput must decide")
	}
}

// TestCellTextNotApplicable: a cell whose schedule does not apply to the
// lock, as the bench writes it in faults.json, reads –, not "not run" (it
// read "not run" while the two sides spelled it differently).
func TestCellTextNotApplicable(t *testing.T) {
	for _, long := range []bool{false, true} {
		if got := CellText(CellCounts{NotRun: NotApplicable}, long); got != "–" {
			t.Errorf("CellText(not applicable, long %v) = %q; want –", long, got)
		}
		if got := CellText(CellCounts{NotRun: "needs PgBouncer started by the rig"}, long); got != "not run" {
			t.Errorf("CellText(not run, long %v) = %q; want not run", long, got)
		}
	}
}

// TestCellTextForms: report.html's matrix cells are the short form of
// faults.md's: the same figures, without "runs" and "to run".
func TestCellTextForms(t *testing.T) {
	for _, tt := range []struct {
		c           CellCounts
		short, long string
	}{
		{CellCounts{Runs: 20}, "0/20", "0/20"},
		{CellCounts{Runs: 20, Unsafe: 7}, "7/20 unsafe", "7/20 runs unsafe"},
		{CellCounts{Runs: 20, Stuck: 3}, "3/20 stuck", "3/20 runs stuck"},
		{CellCounts{Runs: 18, Unsafe: 2, Stuck: 1, Inconclusive: 2}, "2/18 unsafe, 1 stuck (+2 inconclusive)", "2/18 runs unsafe, 1 stuck (+2 inconclusive)"},
		{CellCounts{Runs: 3, Refused: 1}, "0/3 (1 refused)", "0/3 (1 refused to run)"},
		{CellCounts{Inconclusive: 4}, "inconclusive (4)", "inconclusive (4)"},
		{CellCounts{Runs: 20, Releases: 310, FailedTookEffect: 42}, "0/20; 42/310 failed releases took effect", "0/20; 42 of 310 releases reported failed that took effect"},
		{CellCounts{Runs: 20, Stuck: 2, Releases: 300, FailedTookEffect: 1}, "2/20 stuck; 1/300 failed releases took effect", "2/20 runs stuck; 1 of 300 releases reported failed that took effect"},
	} {
		if got := CellText(tt.c, false); got != tt.short {
			t.Errorf("CellText(%+v, short) = %q; want %q", tt.c, got, tt.short)
		}
		if got := CellText(tt.c, true); got != tt.long {
			t.Errorf("CellText(%+v, long) = %q; want %q", tt.c, got, tt.long)
		}
	}
}

// TestVerdictsLeaveAutoPipelinerRows: with -client autopipe a lock's run
// on AutoPipeliners is its own row (correct@autopipe, client autopipe);
// the verdicts are the locks' on their own clients, so such a row is
// neither the pick nor the best peer, however fast.
func TestVerdictsLeaveAutoPipelinerRows(t *testing.T) {
	ap := func(r row) row { r.Impl += "@autopipe"; r.Client = "autopipe"; return r }
	rows := []row{
		rw("correct", "contended", 8, 1, 900), rw("redsync-1", "contended", 8, 1, 800),
		ap(rw("correct", "contended", 8, 1, 9000)), ap(rw("redsync-1", "contended", 8, 1, 8000)),
	}
	lock := func(name string) Lock { return testLock(strings.TrimSuffix(name, "@autopipe")) }
	v := verdicts(rows, lock)[0]
	if v.Pick != "correct" || strings.Contains(v.Sentence(), "autopipe") {
		t.Errorf("verdict = %s; want correct on its own clients, no @autopipe row", v.Sentence())
	}
}
