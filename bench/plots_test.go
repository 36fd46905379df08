package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/bench/registry"
	"github.com/locklab/locklab/bench/report"
	"github.com/locklab/locklab/bench/speed"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// readableLines is the limit on lines in a plot panel (issue 36:
// "no plot panel has more than eight lines"), kept apart from
// maxPanelLines so that raising that constant fails the tests.
const readableLines = 8

// plotCells are the cells the plot tests draw: contended at three client
// counts (so the plots against clients are drawn) and the keys scenario.
var plotCells = []speed.Cell{
	{Scenario: speed.ScContended, Clients: 2, Hold: time.Millisecond, Keys: 1},
	{Scenario: speed.ScContended, Clients: 8, Hold: time.Millisecond, Keys: 1},
	{Scenario: speed.ScContended, Clients: 32, Hold: time.Millisecond, Keys: 1},
	{Scenario: speed.ScKeys, Clients: 64, Hold: 0, Keys: 1024},
}

// allRegistered returns every registered lock's name, naive ones too, in
// display order: more lines than any panel may draw.
func allRegistered() []string {
	var names []string
	for n := range registry.Locks {
		names = append(names, n)
	}
	return registry.Sorted(names)
}

// plotResults makes syntheticResults whose rows also carry Redis
// commands per acquisition, as a run's do.
func plotResults(t *testing.T, names []string, cs []speed.Cell, rounds int, rng *rand.Rand) *report.Results {
	t.Helper()
	res := syntheticResults(t, names, cs, rounds, rng)
	for i := range res.Rows {
		res.Rows[i].RedisCmdsPerOp = 2 + rng.Float64()
	}
	return res
}

// plotCharts draws every chart writePlots draws for res, by file stem.
func plotCharts(t *testing.T, res *report.Results) map[string]*report.Chart {
	t.Helper()
	st := report.NewLockStyles(append(report.RegisteredLocks(), res.LockInfos()...))
	locks := res.LockInfos()
	out := map[string]*report.Chart{}
	for _, c := range res.Cells {
		hs := map[string]*hdrhistogram.Histogram{}
		for _, l := range locks {
			hs[l.Name] = res.Hists[speed.GroupKey{Impl: l.Name, Cell: c}]
		}
		ch, err := report.LatencyPlot(c, locks, hs, report.FifoFloor(res.Rows, c), st)
		if err != nil {
			t.Fatalf("latencyPlot(%s) = %v", c, err)
		}
		out["latency_"+c.ID()] = ch
	}
	for _, g := range res.ScenarioHolds() {
		rows := res.RowsOf(g.Scenario, g.Hold)
		stem := g.Scenario + "_h" + speed.FmtHold(g.Hold)
		if g.MultiClients {
			ch, err := report.ClientsPlot("throughput", "acquisitions/s", true, false, rows, locks, func(r speed.Row) float64 { return r.OpsPerSec }, nil, st)
			if err != nil {
				t.Fatalf("clientsPlot(throughput %s) = %v", stem, err)
			}
			out["throughput_"+stem] = ch
			ch, err = report.ClientsPlot("p99", "wait p99 (ms)", false, true, rows, locks, func(r speed.Row) float64 { return r.WaitP99Us / 1000 }, report.FifoFloors(rows), st)
			if err != nil {
				t.Fatalf("clientsPlot(p99 %s) = %v", stem, err)
			}
			out["p99_"+stem] = ch
		}
		ch, err := report.CmdsPlot("cmds", rows, locks, st)
		if err != nil {
			t.Fatalf("cmdsPlot(%s) = %v", stem, err)
		}
		out["cmds_"+stem] = ch
	}
	return out
}

// TestPlotPanelsAtMostEightLines draws every plot of a run of every
// registered lock (22 and more lines a plot before the panels) and checks
// that no panel draws more than maxPanelLines lines, the FIFO floor
// included, and that every lock of the run is drawn in each plot.
func TestPlotPanelsAtMostEightLines(t *testing.T) {
	names := allRegistered()
	if len(names) <= readableLines {
		t.Fatalf("only %d registered locks; the test needs more than %d", len(names), readableLines)
	}
	res := plotResults(t, names, plotCells, 1, rand.New(rand.NewPCG(1, 2)))
	for stem, ch := range plotCharts(t, res) {
		if err := ch.Check(); err != nil {
			t.Errorf("%s: %v", stem, err)
		}
		drawn := map[string]bool{}
		for _, pn := range ch.Panels {
			if pn.Lines > readableLines {
				t.Errorf("%s: panel %q draws %d lines (%q); want at most %d", stem, pn.Plot.Title.Text, pn.Lines, pn.Labels, readableLines)
			}
			for n := range pn.Styles {
				drawn[n] = true
			}
		}
		for _, n := range names {
			if !drawn[n] {
				t.Errorf("%s: %s is in no panel", stem, n)
			}
		}
	}
}

// TestPlotPlanPanels checks the panels' plan for many locks of every
// kind: never more than maxPanelLines lines, every lock in a panel, the
// headline panels of ours with the best peer and floor of their number of
// servers, and ours spread evenly.
func TestPlotPlanPanels(t *testing.T) {
	var locks []report.LockInfo
	add := func(kind registry.Kind, nodes, n int) {
		for i := range n {
			floor := "raw"
			if nodes > 1 {
				floor = "raw-5"
			}
			locks = append(locks, report.LockInfo{Name: fmt.Sprintf("%s-%d-%d", kind, nodes, i), Kind: kind, Nodes: nodes, Floor: floor})
		}
	}
	add(registry.Ours, 1, 13)
	add(registry.Ours, 5, 2)
	add(registry.Peer, 1, 5)
	add(registry.Peer, 5, 1)
	locks = append(locks, report.LockInfo{Name: "raw", Kind: registry.Floor, Nodes: 1, Floor: "raw"},
		report.LockInfo{Name: "raw-5", Kind: registry.Floor, Nodes: 5, Floor: "raw-5"})
	add(registry.Floor, 1, 3)
	add(registry.Naive, 1, 4)
	best := func(names []string) string { return names[len(names)-1] } // the last peer
	for extra := range 2 {
		plans := report.PlanPanels(locks, extra, best)
		seen := map[string]int{}
		for _, pl := range plans {
			if got := len(pl.Names) + extra; got > readableLines {
				t.Errorf("extra %d: panel %q draws %d lines; want at most %d", extra, pl.Title, got, readableLines)
			}
			for _, n := range pl.Names {
				seen[n]++
			}
		}
		for _, l := range locks {
			if seen[l.Name] == 0 {
				t.Errorf("extra %d: %s is in no panel", extra, l.Name)
			}
		}
		// One server: 13 of ours, 2 references, so 3 panels of 4-5 of ours
		// (extra 1: 5 lines for ours) or 3 of 4-5 (extra 0: 6 lines).
		var head []report.PanelPlan
		for _, pl := range plans {
			if strings.HasPrefix(pl.Title, "one server") {
				head = append(head, pl)
			}
		}
		if len(head) != 3 {
			t.Fatalf("extra %d: %d one-server headline panels; want 3", extra, len(head))
		}
		for _, pl := range head {
			if !pl.Bold || pl.Roles["peer-1-4"] != "best peer" || pl.Roles["raw"] != "floor" {
				t.Errorf("extra %d: panel %q: bold %v, roles %v; want bold with peer-1-4 the best peer and raw the floor", extra, pl.Title, pl.Bold, pl.Roles)
			}
			if !slices.Contains(pl.Names, "peer-1-4") || !slices.Contains(pl.Names, "raw") {
				t.Errorf("extra %d: panel %q draws %q; want the best peer and the floor in it", extra, pl.Title, pl.Names)
			}
			if ours := len(pl.Names) - 2; ours < 4 || ours > 5 {
				t.Errorf("extra %d: panel %q draws %d of ours; want 4 or 5 (13 spread over 3)", extra, pl.Title, ours)
			}
		}
		five := slices.IndexFunc(plans, func(pl report.PanelPlan) bool { return strings.HasPrefix(pl.Title, "five servers") })
		if five < 0 || !slices.Equal(plans[five].Names, []string{"ours-5-0", "ours-5-1", "peer-5-0", "raw-5"}) {
			t.Errorf("extra %d: the five-server panel is %v; want ours-5-0, ours-5-1, peer-5-0, raw-5", extra, plans)
		}
	}
}

// TestPlotChartRefusesNinthLine checks that a chart whose panel draws
// more than maxPanelLines lines is not saved.
func TestPlotChartRefusesNinthLine(t *testing.T) {
	locks := make([]report.LockInfo, report.MaxPanelLines+1)
	hs := map[string]*hdrhistogram.Histogram{}
	for i := range locks {
		locks[i] = report.LockInfo{Name: fmt.Sprintf("peer-%d", i), Kind: registry.Peer, Nodes: 1, Floor: "raw"}
		h := speed.NewHist()
		speed.Record(h, time.Millisecond)
		hs[locks[i].Name] = h
	}
	ch, err := report.LatencyPlot(plotCells[0], locks, hs, 0, report.NewLockStyles(locks))
	if err != nil {
		t.Fatal(err)
	}
	for _, pn := range ch.Panels {
		if pn.Lines > readableLines {
			t.Fatalf("panel %q draws %d lines", pn.Plot.Title.Text, pn.Lines)
		}
	}
	// A panel filled by hand past the limit.
	pn := ch.Panels[0]
	for pn.Lines <= report.MaxPanelLines {
		pn.Lines++
	}
	if _, err := ch.Save(t.TempDir(), "too_many"); err == nil || !strings.Contains(err.Error(), "at most 8") {
		t.Errorf("save of a panel with %d lines = %v; want an error saying at most 8", pn.Lines, err)
	}
}

// TestPlotSameStyleEverywhere checks that a lock has one colour and dash
// pattern in every plot of a report, in every panel, whatever else ran,
// and that no two registered locks share both.
func TestPlotSameStyleEverywhere(t *testing.T) {
	type style struct {
		color  string
		dashes string
	}
	key := func(ls draw.LineStyle) style {
		return style{fmt.Sprint(ls.Color), fmt.Sprint(ls.Dashes)}
	}
	want := map[string]style{}
	for n, s := range report.NewLockStyles(report.RegisteredLocks()) {
		want[n] = style{fmt.Sprint(s.Color), fmt.Sprint(s.Dashes)}
	}
	owner := map[style]string{}
	for n, s := range want {
		if o, dup := owner[s]; dup {
			t.Errorf("%s and %s share colour %s and dashes %s", n, o, s.color, s.dashes)
		}
		owner[s] = n
	}
	if o, dup := owner[key(report.FifoStyle)]; dup {
		t.Errorf("%s is drawn as the FIFO floor is", o)
	}
	runs := map[string][]string{
		"every lock": allRegistered(),
		"a few":      {"correct", "redsync-1", "raw", "fencing"},
	}
	for run, names := range runs {
		res := plotResults(t, names, plotCells, 1, rand.New(rand.NewPCG(3, 4)))
		plots := 0
		for stem, ch := range plotCharts(t, res) {
			for _, pn := range ch.Panels {
				for n, ls := range pn.Styles {
					if got := key(ls); got != want[n] {
						t.Errorf("%s, %s: %s drawn with %v; want %v as in every plot", run, stem, n, got, want[n])
					}
				}
			}
			if _, ok := ch.Panels[0].Styles["correct"]; ok {
				plots++
			}
		}
		if plots < 2 {
			t.Errorf("%s: correct is drawn in %d plots; the test needs two or more", run, plots)
		}
	}
}

// TestPlotLegendOutsideData checks that every legend is drawn to the right
// of its panel's data area, inside the figure.
func TestPlotLegendOutsideData(t *testing.T) {
	res := plotResults(t, allRegistered(), plotCells, 1, rand.New(rand.NewPCG(5, 6)))
	for stem, ch := range plotCharts(t, res) {
		w, h := ch.Size()
		dc := draw.NewCanvas(nil, w, h) // layout only measures
		for i, tl := range ch.Layout(dc) {
			if tl.Legend.Min.X < tl.Data.Max.X {
				t.Errorf("%s panel %d: legend starts at x=%v, inside the data area ending at x=%v", stem, i, tl.Legend.Min.X, tl.Data.Max.X)
			}
			if tl.Legend.Max.X > w || tl.Legend.Min.Y < 0 || tl.Legend.Max.Y > h {
				t.Errorf("%s panel %d: legend %v outside the figure %vx%v", stem, i, tl.Legend, w, h)
			}
			pn := ch.Panels[i]
			need := vg.Length(len(pn.Labels)) * (pn.Legend.TextStyle.Rectangle("M").Max.Y + pn.Legend.Padding)
			if need > tl.Legend.Size().Y {
				t.Errorf("%s panel %d: %d legend entries need %v; the legend has %v", stem, i, len(pn.Labels), need, tl.Legend.Size().Y)
			}
		}
	}
}

// TestPlotFIFOFloor checks the FIFO floor the wait plots draw: the lowest
// of the cell's rows' (N-1) x (held p50 + handoff p50), only in contended
// cells, flat across the percentiles, in every panel of a contended
// cell's wait plots and of the p99 plot, and in no other plot.
func TestPlotFIFOFloor(t *testing.T) {
	c8 := plotCells[1]
	rows := []speed.Row{
		{Impl: "a", Scenario: speed.ScContended, Clients: 8, HoldUs: 1000, FIFOFloorUs: 7 * (1000 + 200)},
		{Impl: "b", Scenario: speed.ScContended, Clients: 8, HoldUs: 1000, FIFOFloorUs: 7 * (1000 + 50)},
		{Impl: "c", Scenario: speed.ScContended, Clients: 8, HoldUs: 1000}, // no hand-off seen
		{Impl: "a", Scenario: speed.ScContended, Clients: 2, HoldUs: 1000, FIFOFloorUs: 1 * (1000 + 40)},
		{Impl: "a", Scenario: speed.ScKeys, Clients: 64, HoldUs: 0},
	}
	for _, tc := range []struct {
		c    speed.Cell
		want float64
	}{
		{c8, 7 * 1050},
		{plotCells[0], 1040},
		{plotCells[3], 0},
		{speed.Cell{Scenario: speed.ScContended, Clients: 1, Hold: time.Millisecond, Keys: 1}, 0},
	} {
		if got := report.FifoFloor(rows, tc.c); got != tc.want {
			t.Errorf("fifoFloor(%s) = %v; want %v", tc.c, got, tc.want)
		}
	}
	if got, want := report.FifoFloors(rows), map[int]float64{8: 7.35, 2: 1.04}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("fifoFloors = %v; want %v", got, want)
	}

	res := plotResults(t, allRegistered(), plotCells, 1, rand.New(rand.NewPCG(7, 8)))
	for stem, ch := range plotCharts(t, res) {
		wantFloor := strings.HasPrefix(stem, "p99_contended") ||
			strings.HasPrefix(stem, "latency_contended") && !strings.Contains(stem, "_c1_")
		for _, pn := range ch.Panels {
			has := slices.ContainsFunc(pn.Labels, func(l string) bool { return strings.HasPrefix(l, "FIFO floor") })
			if has != wantFloor {
				t.Errorf("%s, panel %q: FIFO floor drawn %v; want %v (legend %q)", stem, pn.Plot.Title.Text, has, wantFloor, pn.Labels)
			}
		}
	}
}

// TestPlotWritePlots writes the plots of a run of every registered lock
// and checks each is there as PNG and SVG.
func TestPlotWritePlots(t *testing.T) {
	res := plotResults(t, allRegistered(), plotCells, 1, rand.New(rand.NewPCG(9, 10)))
	dir := t.TempDir()
	files, err := res.WritePlots(dir)
	if err != nil {
		t.Fatalf("writePlots = %v", err)
	}
	n := 0
	for sec, fs := range files {
		for _, f := range fs {
			n++
			for _, ext := range []string{".svg", ".png"} {
				p := filepath.Join(dir, strings.TrimSuffix(f, ".svg")+ext)
				if st, err := os.Stat(p); err != nil || st.Size() == 0 {
					t.Errorf("%s: %s missing or empty: %v", sec, p, err)
				}
			}
		}
	}
	// 4 latency, then for contended h1ms throughput, p99 and cmds, and cmds for keys h0.
	if n != 8 {
		t.Errorf("writePlots wrote %d plots (%v); want 8", n, files)
	}
}
