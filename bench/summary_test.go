package main

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/bench/registry"
	"github.com/locklab/locklab/bench/report"
	"github.com/locklab/locklab/bench/speed"
)

// syntheticResults makes results from made-up runs: every impl in every
// cell for rounds rounds, with figures drawn from rng, so the summary and
// the tables are rendered from the same data as in a real run.
func syntheticResults(t *testing.T, names []string, cs []speed.Cell, rounds int, rng *rand.Rand) *report.Results {
	t.Helper()
	var impls []*registry.Lock
	for _, n := range names {
		im, ok := registry.Locks[n]
		if !ok {
			t.Fatalf("no impl %q", n)
		}
		impls = append(impls, im)
	}
	var runs []*speed.RunResult
	for round := range rounds {
		for _, c := range cs {
			for _, im := range impls {
				r := &speed.RunResult{
					Spec: speed.RunSpec{Impl: im, Cell: c, Round: round},
					Ops:  int64(500 + rng.IntN(20000)), Elapsed: time.Second,
					Wait: speed.NewHist(), Release: speed.NewHist(), Handoff: speed.NewHist(), Held: speed.NewHist(),
					PerClient: make([]int64, c.Clients),
				}
				for range 200 {
					speed.Record(r.Wait, time.Duration(50+rng.IntN(200_000))*time.Microsecond)
					speed.Record(r.Release, time.Duration(50+rng.IntN(200))*time.Microsecond)
					speed.Record(r.Held, c.Hold+time.Duration(rng.IntN(100))*time.Microsecond)
					if c.Keys == 1 && c.Clients > 1 {
						speed.Record(r.Handoff, time.Duration(100+rng.IntN(300))*time.Microsecond)
					}
				}
				for i := range r.PerClient {
					r.PerClient[i] = r.Ops / int64(c.Clients)
				}
				runs = append(runs, r)
			}
		}
	}
	cfg := &speed.Config{Duration: time.Second, Rounds: rounds, MaxOps: speed.DefaultMaxOps, TTL: speed.DefaultTTL, Keys: 1024, Rtt: time.Millisecond, Check: "async"}
	mach := report.Machine{Start: time.Unix(0, 0).UTC(), Command: "go run ./bench (synthetic)"}
	return report.NewResults(cfg, mach, cs, impls, runs)
}

// TestSummaryMatchesTables renders the summary and the tables of made-up
// runs and checks every summary figure against the tables: the leader and
// the best peer are the best in their table column, each figure is printed
// as the table prints it, each "× floor" is the table's, and each "× best
// peer" is the same-round median recomputed from summary.json's rounds.
func TestSummaryMatchesTables(t *testing.T) {
	names := []string{"correct", "correct-poll", "redsync-1", "redislock", "rueidislock", "raw", "raw-again", "raw+receipt", "redlock-5", "redsync-5", "raw-5", "raw-5+receipt"}
	cs := []speed.Cell{
		{Scenario: speed.ScUncontended, Clients: 1},
		{Scenario: speed.ScContended, Clients: 8, Hold: time.Millisecond, Keys: 1},
		{Scenario: speed.ScContended, Clients: 32, Keys: 1},
		{Scenario: speed.ScKeys, Clients: 64, Keys: 1024},
	}
	for seed := range uint64(4) {
		res := syntheticResults(t, names, cs, 3, rand.New(rand.NewPCG(seed, 7)))
		checkSummary(t, res, res.Summary(), res.Tables())
	}
}

func checkSummary(t *testing.T, res *report.Results, summary, tables string) {
	t.Helper()
	tabs := parseTables(t, tables)
	lines := 0
	var group []string // the current summary table's header
	for _, ln := range strings.Split(summary, "\n") {
		if strings.HasPrefix(ln, "| cell |") {
			group = splitRow(ln)
			continue
		}
		if group == nil || !strings.HasPrefix(ln, "| ") || strings.HasPrefix(ln, "|---") {
			if !strings.HasPrefix(ln, "|") {
				group = nil
			}
			continue
		}
		cells := splitRow(ln)
		lines++
		label, fig := cells[0], strings.Fields(cells[1])
		figName := strings.Join(fig[:len(fig)-1], " ")
		sc, n, hold := parseLabel(t, label)
		col := "ops/s"
		floorCol := "× floor"
		if figName == "wait p99" {
			col, floorCol = "p99", "p99 × floor"
		}
		rows := tabs[sc]
		c := func(sc string, n int, hold string) speed.Cell {
			for _, cc := range res.Cells {
				if cc.Scenario == sc && cc.Clients == n && speed.FmtHold(cc.Hold) == hold {
					return cc
				}
			}
			t.Fatalf("%q: no cell %s N=%d hold %s", ln, sc, n, hold)
			return speed.Cell{}
		}
		find := func(impl string) map[string]string {
			for _, r := range rows {
				if r["impl"] == impl && r["N"] == strconv.Itoa(n) && strings.HasPrefix(r["hold (held p50)"], hold+" ") {
					return r
				}
			}
			return nil
		}
		get := func(impl string) map[string]string {
			if r := find(impl); r != nil {
				return r
			}
			t.Fatalf("summary line %q: no table row for %s N=%d hold %s", ln, impl, n, hold)
			return nil
		}
		// The leader and best peer: named with their table figure, and
		// the best in that column among their kinds on this many servers.
		nodes := registry.Locks[group[6]].Nodes
		for i, kinds := range [][]registry.Kind{{registry.Ours, registry.Peer}, {registry.Peer}} {
			name, val, _ := strings.Cut(cells[2+i], " ")
			if got := get(name)[col]; got != val {
				t.Errorf("%q: %s is shown with %s; its table says %s", ln, name, val, got)
			}
			best := parseFigure(t, val)
			for _, r := range rows {
				im := registry.Locks[r["impl"]]
				if r["N"] != strconv.Itoa(n) || !strings.HasPrefix(r["hold (held p50)"], hold+" ") || im.Nodes != nodes {
					continue
				}
				if kinds[0] != im.Kind && (len(kinds) < 2 || kinds[1] != im.Kind) {
					continue
				}
				v := parseFigure(t, r[col])
				if figName == "wait p99" && v < best || figName != "wait p99" && v > best {
					t.Errorf("%q: %s is shown as the best, but %s has %s", ln, name, r["impl"], r[col])
				}
			}
		}
		if figName != "wait p99" {
			name, val, _ := strings.Cut(cells[4], " ")
			val, aa, hasAA := strings.Cut(val, " (A/A ")
			if got := get(name)[col]; got != val {
				t.Errorf("%q: floor %s is shown with %s; its table says %s", ln, name, val, got)
			}
			// The A/A control: raw-again over raw, lowest and highest
			// round, recomputed from summary.json's rounds.
			if nodes == 1 && find("raw-again") != nil {
				if want := aaFromRows(t, res, name, c(sc, n, hold)); !hasAA || aa != want+")" {
					t.Errorf("%q: A/A shown as %q (shown: %v); from the rounds it is %q", ln, aa, hasAA, want)
				}
			} else if hasAA {
				t.Errorf("%q: A/A shown without a raw-again row", ln)
			}
			if cells[5] != "–" {
				name, val, _ = strings.Cut(cells[5], " ")
				val, ratio, _ := strings.Cut(val, " (")
				if r := get(name); r[col] != val || r[floorCol]+")" != ratio {
					t.Errorf("%q: floor with receipts %s is shown with %s (%s; its table says %s (%s)", ln, name, val, ratio, r[col], r[floorCol])
				}
			}
		}
		peer, _, _ := strings.Cut(cells[3], " ")
		for i, ours := range group[6:] {
			v := cells[6+i]
			if v == "–" {
				continue
			}
			peerRatio, floorRatio, ok := strings.Cut(v, " · ")
			if !ok {
				t.Fatalf("%q: cell %q is not 'x · y'", ln, v)
			}
			r := get(ours)
			if r[floorCol] != floorRatio {
				t.Errorf("%q: %s × floor %s; the table's %s is %s", ln, ours, floorRatio, floorCol, r[floorCol])
			}
			cl := c(sc, n, hold)
			want := sameRoundFromRows(t, res, ours, peer, cl, figName)
			if ra, _ := res.RowOf(ours, cl); len(ra.PerRound) > 1 {
				want += aheadFromRows(t, res, ours, peer, cl, figName)
			}
			if peerRatio != want {
				t.Errorf("%q: %s × best peer %s; from summary.json's rounds it is %s", ln, ours, peerRatio, want)
			}
		}
	}
	if lines == 0 {
		t.Fatalf("no summary lines in:\n%s", summary)
	}
}

// aaFromRows recomputes the A/A control of cell c from the rows'
// per-round figures: raw-again's acquisitions per second over floor's,
// "lowest–highest×".
func aaFromRows(t *testing.T, res *report.Results, floor string, c speed.Cell) string {
	t.Helper()
	ra, ok1 := res.RowOf("raw-again", c)
	rf, ok2 := res.RowOf(floor, c)
	if !ok1 || !ok2 {
		t.Fatalf("rows of raw-again and %s in %v missing", floor, c)
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, a := range ra.PerRound {
		for _, f := range rf.PerRound {
			if a.Round == f.Round {
				lo, hi = min(lo, a.OpsPerSec/f.OpsPerSec), max(hi, a.OpsPerSec/f.OpsPerSec)
			}
		}
	}
	return fmt.Sprintf("%.2f–%.2f×", lo, hi)
}

// sameRoundFromRows recomputes a same-round ratio from the rows' per-round
// figures (what summary.json holds).
func sameRoundFromRows(t *testing.T, res *report.Results, a, b string, c speed.Cell, fig string) string {
	t.Helper()
	ra, ok1 := res.RowOf(a, c)
	rb, ok2 := res.RowOf(b, c)
	if !ok1 || !ok2 {
		t.Fatalf("rows of %s and %s in %v missing", a, b, c)
	}
	pick := func(r speed.Row) map[int]float64 {
		m := map[int]float64{}
		for _, f := range r.PerRound {
			if fig == "wait p99" {
				m[f.Round] = f.WaitP99Us
			} else {
				m[f.Round] = f.OpsPerSec
			}
		}
		return m
	}
	v, ok := speed.RatioMedian(pick(ra), pick(rb))
	if !ok {
		return "–"
	}
	return report.FmtRatio(&v)
}

// aheadFromRows recounts, from the rows' per-round figures, the rounds in
// which a did better than b, as the summary prints them.
func aheadFromRows(t *testing.T, res *report.Results, a, b string, c speed.Cell, fig string) string {
	t.Helper()
	ra, _ := res.RowOf(a, c)
	rb, _ := res.RowOf(b, c)
	ahead, n := 0, 0
	for _, fa := range ra.PerRound {
		for _, fb := range rb.PerRound {
			if fa.Round != fb.Round {
				continue
			}
			n++
			if fig == "wait p99" && fa.WaitP99Us < fb.WaitP99Us || fig != "wait p99" && fa.OpsPerSec > fb.OpsPerSec {
				ahead++
			}
		}
	}
	return fmt.Sprintf(" (ahead %d/%d)", ahead, n)
}

// parseTables reads the scenario tables into rows of header → cell.
func parseTables(t *testing.T, md string) map[string][]map[string]string {
	t.Helper()
	out := map[string][]map[string]string{}
	var sc string
	var head []string
	for _, ln := range strings.Split(md, "\n") {
		switch {
		case strings.HasPrefix(ln, "## "):
			sc, head = strings.TrimPrefix(ln, "## "), nil
		case strings.HasPrefix(ln, "| impl |"):
			head = splitRow(ln)
		case strings.HasPrefix(ln, "|---"):
		case strings.HasPrefix(ln, "| ") && head != nil:
			cells := splitRow(ln)
			if len(cells) != len(head) {
				t.Fatalf("table row has %d cells, header %d: %q", len(cells), len(head), ln)
			}
			r := map[string]string{}
			for i, h := range head {
				r[h] = cells[i]
			}
			out[sc] = append(out[sc], r)
		}
	}
	return out
}

func splitRow(ln string) []string {
	parts := strings.Split(strings.Trim(strings.TrimSpace(ln), "|"), "|")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// parseLabel reverses summaryLabel.
func parseLabel(t *testing.T, label string) (sc string, n int, hold string) {
	t.Helper()
	parts := strings.Split(label, ", ")
	sc, n, hold = parts[0], 1, "0"
	for _, p := range parts[1:] {
		switch {
		case strings.HasPrefix(p, "hold "):
			hold = strings.TrimPrefix(p, "hold ")
		case strings.Contains(p, " clients"):
			v, err := strconv.Atoi(strings.Fields(p)[0])
			if err != nil {
				t.Fatalf("label %q: %v", label, err)
			}
			n = v
		}
	}
	return sc, n, hold
}

// parseFigure reads "13359", "13359 (saturated)", "13.3 ms", "950 µs" or
// "1.20 s" as a number (µs for durations).
func parseFigure(t *testing.T, s string) float64 {
	t.Helper()
	f := strings.Fields(s)
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		t.Fatalf("figure %q: %v", s, err)
	}
	if len(f) > 1 {
		switch f[1] {
		case "ms":
			v *= 1e3
		case "s":
			v *= 1e6
		}
	}
	return v
}

// TestHeadlineCellsOfTheDefaultPlan: the summary's headline cells for the
// whole plan (-full) are one per scenario, and the cells the lock targets
// are set on: 32 clients with a 1ms hold on one key, hold 0 over many keys.
func TestHeadlineCellsOfTheDefaultPlan(t *testing.T) {
	c, err := parseFlags([]string{"-full"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range speed.HeadlineCells(speed.Cells(c)) {
		got = append(got, report.SummaryLabel(h))
	}
	want := []string{
		"uncontended",
		"contended, 32 clients, hold 1ms",
		"keys, 64 clients over 1024 keys, hold 0",
		"rtt-uncontended",
		"rtt-contended, 8 clients, hold 1ms",
	}
	if !slices.Equal(got, want) {
		t.Errorf("headline cells:\n got %q\nwant %q", got, want)
	}
}

// TestSummaryOpensWithHeadlinesOnly: the summary's first tables hold the
// headline cells only, and every cell follows under "Every cell".
func TestSummaryOpensWithHeadlinesOnly(t *testing.T) {
	cs := []speed.Cell{
		{Scenario: speed.ScUncontended, Clients: 1},
		{Scenario: speed.ScContended, Clients: 8, Hold: time.Millisecond, Keys: 1},
		{Scenario: speed.ScContended, Clients: 32, Keys: 1},
		{Scenario: speed.ScContended, Clients: 32, Hold: time.Millisecond, Keys: 1},
	}
	res := syntheticResults(t, []string{"correct", "redislock", "raw", "raw+receipt"}, cs, 2, rand.New(rand.NewPCG(1, 2)))
	head, every, ok := strings.Cut(res.Summary(), "## Every cell")
	if !ok {
		t.Fatal("no Every cell section")
	}
	count := func(s, label string) int { return strings.Count(s, "| "+label+" |") }
	for _, c := range cs {
		wantHead := 0
		if c == cs[0] || c == cs[3] {
			wantHead = len(report.FiguresOf(c))
		}
		if n := count(head, report.SummaryLabel(c)); n != wantHead {
			t.Errorf("%s: %d lines in the headline tables, want %d", report.SummaryLabel(c), n, wantHead)
		}
		if n := count(every, report.SummaryLabel(c)); n != len(report.FiguresOf(c)) {
			t.Errorf("%s: %d lines under Every cell, want %d", report.SummaryLabel(c), n, len(report.FiguresOf(c)))
		}
	}
}
