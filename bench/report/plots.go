package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/locklab/locklab/bench/speed"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// The plots of report.md, one file per figure (PNG and SVG). A figure is
// a chart of panels (plots_panels.go): for each number of servers, our
// locks with the best peer and the raw floor, heavy; then the other locks
// in small multiples on the same axes. No panel draws more than
// maxPanelLines lines, every legend sits beside its panel's data, and a
// lock has one colour and dash pattern in every plot (plots_style.go).
// The wait plots of contended cells also draw the FIFO floor (fifoFloor).

// plotFiles are the svg names of the plots written, by report section
// ("latency", "throughput", ...), in the order they were written.
type plotFiles map[string][]string

// add saves c as chart.save does and appends its svg name to section. err
// is the error of the function that drew c: when it is set, add returns
// it and saves nothing.
func (fs plotFiles) add(section, dir, stem string, c *Chart, err error) error {
	if err != nil {
		return err
	}
	f, err := c.Save(dir, stem)
	if err != nil {
		return err
	}
	fs[section] = append(fs[section], f)
	return nil
}

// WritePlots draws the plots and returns their svg names by section.
func (res *Results) WritePlots(dir string) (map[string][]string, error) {
	st := NewLockStyles(append(RegisteredLocks(), res.LockInfos()...))
	locks := res.LockInfos()
	out := plotFiles{}
	for _, c := range res.Cells {
		hs := map[string]*hdrhistogram.Histogram{}
		for _, l := range locks {
			hs[l.Name] = res.Hists[speed.GroupKey{Impl: l.Name, Cell: c}]
		}
		ch, err := LatencyPlot(c, locks, hs, FifoFloor(res.Rows, c), st)
		if err = out.add("latency", dir, "latency_"+c.ID(), ch, err); err != nil {
			return nil, err
		}
	}
	for _, g := range res.ScenarioHolds() {
		rows := res.RowsOf(g.Scenario, g.Hold)
		stem := g.Scenario + "_h" + speed.FmtHold(g.Hold)
		label := fmt.Sprintf("%s, hold %s", g.Scenario, speed.FmtHold(g.Hold))
		if g.MultiClients {
			ch, err := ClientsPlot("throughput: "+label, "acquisitions/s", true, false, rows, locks,
				func(r speed.Row) float64 { return r.OpsPerSec }, nil, st)
			if err = out.add("throughput", dir, "throughput_"+stem, ch, err); err != nil {
				return nil, err
			}
			ch, err = ClientsPlot("p99 wait: "+label, "wait p99 (ms)", false, true, rows, locks,
				func(r speed.Row) float64 { return r.WaitP99Us / 1000 }, FifoFloors(rows), st)
			if err = out.add("p99", dir, "p99_"+stem, ch, err); err != nil {
				return nil, err
			}
		}
		ch, err := CmdsPlot("commands per acquisition: "+label, rows, locks, st)
		if err = out.add("cmds", dir, "cmds_"+stem, ch, err); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// LockInfos returns the run's locks in the run's order.
func (res *Results) LockInfos() []LockInfo {
	out := make([]LockInfo, len(res.impls))
	for i, im := range res.impls {
		out[i] = infoOf(im)
	}
	return out
}

// FifoFloor returns the FIFO floor of cell c in µs, 0 where it has none.
// A perfect FIFO queue hands the lock to the waiters in turn, so with N
// closed-loop clients each waits for the N-1 ahead of it to hold and hand
// over: (N-1) x (hold + hand-off), every wait alike (a flat line across
// the percentiles). Each row carries that figure with its lock's own held
// p50 and handoff p50 (row.FIFOFloorUs); the plot draws the lowest of the
// cell's, a fair queue with the quickest hold and hand-off the cell saw.
func FifoFloor(rows []speed.Row, c speed.Cell) float64 {
	if !c.HasFIFOFloor() {
		return 0
	}
	lo := 0.0
	for _, r := range rows {
		if r.Scenario != c.Scenario || r.Clients != c.Clients || r.HoldUs != float64(c.Hold.Microseconds()) {
			continue
		}
		if f := r.FIFOFloorUs; f > 0 && (lo == 0 || f < lo) {
			lo = f
		}
	}
	return lo
}

// FifoFloors returns the FIFO floor in ms by client count for rows of one
// scenario and hold (fifoFloor's lowest per client count); nil if none.
func FifoFloors(rows []speed.Row) map[int]float64 {
	var out map[int]float64
	for _, r := range rows {
		if r.FIFOFloorUs <= 0 {
			continue
		}
		if out == nil {
			out = map[int]float64{}
		}
		if v, ok := out[r.Clients]; !ok || r.FIFOFloorUs/1000 < v {
			out[r.Clients] = r.FIFOFloorUs / 1000
		}
	}
	return out
}

// bestOf returns a best(names) for planPanels: the name with the lowest
// (or, if higher, the highest) known value.
func bestOf(val func(name string) (float64, bool), higher bool) func([]string) string {
	return func(names []string) string {
		best, bv := "", 0.0
		for _, n := range names {
			v, ok := val(n)
			if !ok {
				continue
			}
			if best == "" || higher && v > bv || !higher && v < bv {
				best, bv = n, v
			}
		}
		return best
	}
}

// percentileTicks label 1/(1-q) as HdrHistogram's plotter does.
var percentileTicks = plot.ConstantTicks{
	{Value: 1, Label: "0%"}, {Value: 10, Label: "90%"}, {Value: 100, Label: "99%"},
	{Value: 1e3, Label: "99.9%"}, {Value: 1e4, Label: "99.99%"}, {Value: 1e5, Label: "99.999%"},
}

// LatencyPlot draws the wait percentile distribution of one cell, one line
// per implementation: x is 1/(1-q) on a log scale, y the wait in ms (log).
// fifoUs, when positive, is the cell's FIFO floor (fifoFloor), drawn flat
// in every panel. The best peer is the one with the lowest p99 wait.
func LatencyPlot(c speed.Cell, locks []LockInfo, hists map[string]*hdrhistogram.Histogram, fifoUs float64, st lockStyles) (*Chart, error) {
	xys := map[string]plotter.XYs{}
	var present []LockInfo
	maxX := 10.0
	for _, l := range locks {
		h := hists[l.Name]
		if h == nil || h.TotalCount() == 0 {
			continue
		}
		var pts plotter.XYs
		for _, b := range h.CumulativeDistributionWithTicks(5) {
			q := b.Quantile / 100
			if q >= 1 {
				continue
			}
			x := 1 / (1 - q)
			pts = append(pts, plotter.XY{X: x, Y: math.Max(float64(b.ValueAt)/1000, 0.001)})
			maxX = math.Max(maxX, x)
		}
		if len(pts) > 0 {
			xys[l.Name] = pts
			present = append(present, l)
		}
	}
	maxX = math.Pow(10, math.Ceil(math.Log10(maxX)))
	extra := 0
	if fifoUs > 0 {
		extra = 1
	}
	best := bestOf(func(n string) (float64, bool) {
		return float64(hists[n].ValueAtQuantile(99)), true
	}, false)
	ch := &Chart{title: "wait percentiles: " + c.String()}
	for _, pl := range PlanPanels(present, extra, best) {
		pn := newPanel(pl.Title)
		p := pn.Plot
		p.X.Label.Text = "percentile"
		p.Y.Label.Text = "wait (ms)"
		p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
		p.X.Tick.Marker = percentileTicks
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		for _, name := range pl.Names {
			l, err := plotter.NewLine(xys[name])
			if err != nil {
				return nil, err
			}
			l.LineStyle = st.line(name, pl.Bold)
			pn.Styles[name] = l.LineStyle
			pn.add(legendLabel(name, pl.Roles), l)
		}
		if fifoUs > 0 {
			l, err := plotter.NewLine(plotter.XYs{{X: 1, Y: fifoUs / 1000}, {X: maxX, Y: fifoUs / 1000}})
			if err != nil {
				return nil, err
			}
			l.LineStyle = FifoStyle
			pn.add("FIFO floor "+fmtMs(fifoUs/1000), l)
		}
		ch.Panels = append(ch.Panels, pn)
	}
	ch.shareAxes()
	for _, pn := range ch.Panels {
		pn.Plot.X.Min, pn.Plot.X.Max = 1, maxX
	}
	return ch, nil
}

// fmtMs prints a wait in ms for a legend.
func fmtMs(ms float64) string {
	if ms < 1 {
		return strconv.FormatFloat(ms, 'f', 3, 64) + " ms"
	}
	return strconv.FormatFloat(ms, 'g', 3, 64) + " ms"
}

// clientCounts returns the distinct client counts of rows, in ascending
// order: the x axis of the figures against clients.
func clientCounts(rows []speed.Row) []int {
	var xs []int
	for _, r := range rows {
		if !slices.Contains(xs, r.Clients) {
			xs = append(xs, r.Clients)
		}
	}
	slices.Sort(xs)
	return xs
}

// atMost returns the value of name's row with the most clients: a plot
// against clients names as best peer the one best where contention is
// highest.
func atMost(rows []speed.Row, get func(speed.Row) float64) func(name string) (float64, bool) {
	return func(name string) (float64, bool) {
		v, n, ok := 0.0, 0, false
		for _, r := range rows {
			if r.Impl == name && r.Clients >= n {
				v, n, ok = get(r), r.Clients, true
			}
		}
		return v, ok
	}
}

// ClientsPlot draws one line per implementation against the number of
// clients, for the rows of one scenario and hold; higher says whether a
// higher figure is better (it picks the best peer). fifo, if not nil, is
// the FIFO floor by client count (fifoFloors), drawn in every panel.
func ClientsPlot(title, ylabel string, higher, logY bool, rows []speed.Row, locks []LockInfo, get func(speed.Row) float64, fifo map[int]float64, st lockStyles) (*Chart, error) {
	xs := clientCounts(rows)
	var ticks plot.ConstantTicks
	for _, x := range xs {
		ticks = append(ticks, plot.Tick{Value: float64(x), Label: strconv.Itoa(x)})
	}
	val := func(y float64) float64 {
		if logY {
			return math.Max(y, 0.001)
		}
		return y
	}
	xys := map[string]plotter.XYs{}
	var present []LockInfo
	for _, l := range locks {
		var pts plotter.XYs
		for _, r := range rows {
			if r.Impl == l.Name {
				pts = append(pts, plotter.XY{X: float64(r.Clients), Y: val(get(r))})
			}
		}
		if len(pts) > 0 {
			slices.SortFunc(pts, func(a, b plotter.XY) int { return int(a.X - b.X) })
			xys[l.Name] = pts
			present = append(present, l)
		}
	}
	var fifoXYs plotter.XYs
	for _, x := range xs {
		if v, ok := fifo[x]; ok {
			fifoXYs = append(fifoXYs, plotter.XY{X: float64(x), Y: val(v)})
		}
	}
	extra := 0
	if len(fifoXYs) > 0 {
		extra = 1
	}
	ch := &Chart{title: title}
	for _, pl := range PlanPanels(present, extra, bestOf(atMost(rows, get), higher)) {
		pn := newPanel(pl.Title)
		p := pn.Plot
		p.X.Label.Text = "clients"
		p.Y.Label.Text = ylabel
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = ticks
		if logY {
			p.Y.Scale = plot.LogScale{}
			p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		}
		for _, name := range pl.Names {
			l, pts, err := plotter.NewLinePoints(xys[name])
			if err != nil {
				return nil, err
			}
			l.LineStyle = st.line(name, pl.Bold)
			pts.Color = l.LineStyle.Color
			pn.Styles[name] = l.LineStyle
			pn.add(legendLabel(name, pl.Roles), l, pts)
		}
		if len(fifoXYs) > 0 {
			l, err := plotter.NewLine(fifoXYs)
			if err != nil {
				return nil, err
			}
			l.LineStyle = FifoStyle
			pn.add("FIFO floor", l)
		}
		ch.Panels = append(ch.Panels, pn)
	}
	ch.shareAxes()
	for _, pn := range ch.Panels {
		p := pn.Plot
		if len(xs) > 0 {
			p.X.Min, p.X.Max = float64(xs[0])/1.3, float64(xs[len(xs)-1])*1.3
		}
		if logY {
			p.Y.Min, p.Y.Max = p.Y.Min/1.3, p.Y.Max*1.3
		} else {
			p.Y.Min, p.Y.Max = 0, math.Max(p.Y.Max, 1)*1.05
		}
	}
	return ch, nil
}

// CmdsPlot draws Redis commands per acquisition as grouped bars: one group
// per client count, one bar per implementation. The best peer is the one
// with the fewest commands at the most clients.
func CmdsPlot(title string, rows []speed.Row, locks []LockInfo, st lockStyles) (*Chart, error) {
	xs := clientCounts(rows)
	// A lock that sent no Redis command (one on etcd, ZooKeeper or
	// PostgreSQL) has no bar to draw.
	var present []LockInfo
	for _, l := range locks {
		if slices.ContainsFunc(rows, func(r speed.Row) bool { return r.Impl == l.Name && r.RedisCmdsPerOp > 0 }) {
			present = append(present, l)
		}
	}
	ch := &Chart{title: title}
	if len(present) == 0 || len(xs) == 0 {
		ch.Panels = append(ch.Panels, newPanel(""))
		return ch, nil
	}
	top := 0.0
	for _, r := range rows {
		top = math.Max(top, r.RedisCmdsPerOp)
	}
	labels := make([]string, len(xs))
	for i, x := range xs {
		labels[i] = "N=" + strconv.Itoa(x)
	}
	best := bestOf(atMost(rows, func(r speed.Row) float64 { return r.RedisCmdsPerOp }), false)
	for _, pl := range PlanPanels(present, 0, best) {
		pn := newPanel(pl.Title)
		p := pn.Plot
		p.Y.Label.Text = "Redis commands per acquisition"
		// One group per data unit; the data area is about 85% of the
		// panel's plotting width.
		groupW := (tileW - legendW) * 0.85 / vg.Length(len(xs))
		w := groupW * 0.8 / vg.Length(len(pl.Names))
		for i, name := range pl.Names {
			vals := make(plotter.Values, len(xs))
			for j, x := range xs {
				for _, r := range rows {
					if r.Impl == name && r.Clients == x {
						vals[j] = r.RedisCmdsPerOp
					}
				}
			}
			b, err := plotter.NewBarChart(vals, w)
			if err != nil {
				return nil, err
			}
			// A bar has no dashes of its own: a lock drawn dashed gets a
			// dashed outline, so two locks of one colour still differ.
			ls := st.line(name, pl.Bold)
			b.Color = ls.Color
			b.LineStyle.Width = 0
			if len(ls.Dashes) > 0 {
				b.LineStyle = draw.LineStyle{Color: rgb(0x000000), Width: vg.Points(1.2), Dashes: ls.Dashes}
			}
			b.Offset = (vg.Length(i) - vg.Length(len(pl.Names)-1)/2) * w
			pn.Styles[name] = ls
			pn.add(legendLabel(name, pl.Roles), b)
		}
		p.NominalX(labels...)
		p.X.Min, p.X.Max = -0.5, float64(len(xs))-0.5
		p.Y.Min, p.Y.Max = 0, math.Max(top, 1)*1.05
		ch.Panels = append(ch.Panels, pn)
	}
	return ch, nil
}
