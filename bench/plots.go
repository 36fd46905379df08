package main

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"slices"
	"strconv"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

const (
	plotW = 8 * vg.Inch
	plotH = 5 * vg.Inch
)

// implStyle gives every implementation the same colour and dashes in every
// plot: its index among the implementations of the run.
type implStyle map[string]int

func (s implStyle) apply(name string, ls *draw.LineStyle) {
	i := s[name]
	ls.Color = s.color(name)
	ls.Dashes = plotutil.Dashes(i / len(palette)) // solid for the first colours
	ls.Width = vg.Points(1.5)
}

func (s implStyle) color(name string) color.Color { return palette[s[name]%len(palette)] }

// palette is Tableau's 10 colours plus two, so that nine implementations
// and the naive ones get distinct colours.
var palette = []color.Color{
	color.RGBA{0x4e, 0x79, 0xa7, 0xff}, color.RGBA{0xf2, 0x8e, 0x2b, 0xff},
	color.RGBA{0xe1, 0x57, 0x59, 0xff}, color.RGBA{0x76, 0xb7, 0xb2, 0xff},
	color.RGBA{0x59, 0xa1, 0x4f, 0xff}, color.RGBA{0xed, 0xc9, 0x48, 0xff},
	color.RGBA{0xb0, 0x7a, 0xa1, 0xff}, color.RGBA{0xff, 0x9d, 0xa7, 0xff},
	color.RGBA{0x9c, 0x75, 0x5f, 0xff}, color.RGBA{0xba, 0xb0, 0xac, 0xff},
	color.RGBA{0x1b, 0x1b, 0x1b, 0xff}, color.RGBA{0x8c, 0xd1, 0x7d, 0xff},
}

// savePlot writes p as dir/stem.png and dir/stem.svg and returns the svg's
// base name.
func savePlot(p *plot.Plot, dir, stem string) (string, error) {
	for _, ext := range []string{".png", ".svg"} {
		if err := p.Save(plotW, plotH, filepath.Join(dir, stem+ext)); err != nil {
			return "", fmt.Errorf("plot %s%s: %w", stem, ext, err)
		}
	}
	return stem + ".svg", nil
}

// plotFiles are the svg names of the plots written, by report section
// ("latency", "throughput", ...), in the order they were written.
type plotFiles map[string][]string

// add saves p as savePlot does and appends its svg name to section. err is
// the error of the function that drew p: when it is set, add returns it
// and saves nothing.
func (fs plotFiles) add(section, dir, stem string, p *plot.Plot, err error) error {
	if err != nil {
		return err
	}
	f, err := savePlot(p, dir, stem)
	if err != nil {
		return err
	}
	fs[section] = append(fs[section], f)
	return nil
}

// percentileTicks label 1/(1-q) as HdrHistogram's plotter does.
var percentileTicks = plot.ConstantTicks{
	{Value: 1, Label: "0%"}, {Value: 10, Label: "90%"}, {Value: 100, Label: "99%"},
	{Value: 1e3, Label: "99.9%"}, {Value: 1e4, Label: "99.99%"}, {Value: 1e5, Label: "99.999%"},
}

// latencyPlot draws the wait percentile distribution of one cell, one line
// per implementation: x is 1/(1-q) on a log scale, y the wait in ms (log).
func latencyPlot(c cell, names []string, hists map[string]*hdrhistogram.Histogram, st implStyle) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "wait percentiles: " + c.String()
	p.X.Label.Text = "percentile"
	p.Y.Label.Text = "wait (ms)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker = percentileTicks
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Add(plotter.NewGrid())
	p.Legend.Top, p.Legend.Left = true, true
	maxX := 10.0
	for _, name := range names {
		h := hists[name]
		if h == nil || h.TotalCount() == 0 {
			continue
		}
		var xys plotter.XYs
		for _, b := range h.CumulativeDistributionWithTicks(5) {
			q := b.Quantile / 100
			if q >= 1 {
				continue
			}
			x := 1 / (1 - q)
			xys = append(xys, plotter.XY{X: x, Y: math.Max(float64(b.ValueAt)/1000, 0.001)})
			maxX = math.Max(maxX, x)
		}
		if len(xys) == 0 {
			continue
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, err
		}
		st.apply(name, &l.LineStyle)
		p.Add(l)
		p.Legend.Add(name, l)
	}
	p.X.Min, p.X.Max = 1, math.Pow(10, math.Ceil(math.Log10(maxX)))
	return p, nil
}

// clientCounts returns the distinct client counts of rows, in ascending
// order: the x axis of the figures against clients.
func clientCounts(rows []row) []int {
	var xs []int
	for _, r := range rows {
		if !slices.Contains(xs, r.Clients) {
			xs = append(xs, r.Clients)
		}
	}
	slices.Sort(xs)
	return xs
}

// clientsPlot draws one figure per implementation against the number of
// clients, for the rows of one scenario and hold.
func clientsPlot(title, ylabel string, logY bool, rows []row, names []string, get func(row) float64, st implStyle) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "clients"
	p.Y.Label.Text = ylabel
	p.X.Scale = plot.LogScale{}
	var ticks plot.ConstantTicks
	xs := clientCounts(rows)
	for _, x := range xs {
		ticks = append(ticks, plot.Tick{Value: float64(x), Label: strconv.Itoa(x)})
	}
	p.X.Tick.Marker = ticks
	if logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	p.Add(plotter.NewGrid())
	p.Legend.Top, p.Legend.Left = true, true
	lo, hi, lines := math.Inf(1), 0.0, 0
	for _, name := range names {
		var xys plotter.XYs
		for _, r := range rows {
			if r.Impl != name {
				continue
			}
			y := get(r)
			if logY {
				y = math.Max(y, 0.001)
			}
			xys = append(xys, plotter.XY{X: float64(r.Clients), Y: y})
			lo, hi = math.Min(lo, y), math.Max(hi, y)
		}
		if len(xys) == 0 {
			continue
		}
		lines++
		slices.SortFunc(xys, func(a, b plotter.XY) int { return int(a.X - b.X) })
		l, pts, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, err
		}
		st.apply(name, &l.LineStyle)
		pts.Color = st.color(name)
		p.Add(l, pts)
		p.Legend.Add(name, l, pts)
	}
	if len(xs) > 0 {
		p.X.Min, p.X.Max = float64(xs[0])/1.3, float64(xs[len(xs)-1])*1.3
	}
	// Leave the top of the plot to the legend.
	room := 1 + 0.07*float64(lines)
	if logY && hi > 0 {
		p.Y.Min, p.Y.Max = lo/1.5, hi*math.Pow(hi/lo*1.5, room-1)
	} else if !logY {
		p.Y.Min, p.Y.Max = 0, math.Max(hi, 1)*room
	}
	return p, nil
}

// cmdsPlot draws Redis commands per acquisition as grouped bars: one group
// per client count, one bar per implementation.
func cmdsPlot(title string, rows []row, names []string, st implStyle) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = "Redis commands per acquisition"
	xs := clientCounts(rows)
	var present []string
	for _, n := range names {
		if slices.ContainsFunc(rows, func(r row) bool { return r.Impl == n }) {
			present = append(present, n)
		}
	}
	if len(present) == 0 || len(xs) == 0 {
		return p, nil
	}
	top := 0.0
	for _, r := range rows {
		top = math.Max(top, r.RedisCmdsPerOp)
	}
	// One group per data unit; the data area is about 85% of the width.
	groupW := plotW * 0.85 / vg.Length(len(xs))
	w := groupW * 0.8 / vg.Length(len(present))
	for i, name := range present {
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
		b.Color = st.color(name)
		b.LineStyle.Width = 0
		b.Offset = (vg.Length(i) - vg.Length(len(present)-1)/2) * w
		p.Add(b)
		p.Legend.Add(name, b)
	}
	labels := make([]string, len(xs))
	for i, x := range xs {
		labels[i] = "N=" + strconv.Itoa(x)
	}
	p.NominalX(labels...)
	p.X.Min, p.X.Max = -0.5, float64(len(xs))-0.5
	p.Legend.Top = true
	p.Y.Min = 0
	// Leave the top of the plot to the legend.
	p.Y.Max = math.Max(top, 1) * (1 + 0.08*float64(len(present)))
	return p, nil
}
