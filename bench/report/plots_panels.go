package report

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/locklab/locklab/bench/registry"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	_ "gonum.org/v1/plot/vg/vgimg" // the png format
	_ "gonum.org/v1/plot/vg/vgsvg" // the svg format
)

// MaxPanelLines is the most lines (or bar series) a plot panel draws, the
// FIFO floor included: past about eight, colours repeat and no reader
// follows a line. chart.save refuses a panel with more.
const MaxPanelLines = 8

// A figure's size: panels in up to two columns, each a tile with its plot
// on the left and its legend to the right of the plotting area.
const (
	tileW    = 7.6 * vg.Inch
	tileH    = 3.8 * vg.Inch
	legendW  = 2.1 * vg.Inch
	titleH   = 0.45 * vg.Inch
	tilePad  = 0.08 * vg.Inch
	maxTiles = 2 // columns
)

// PanelPlan is one panel of a figure: which locks it draws and how.
type PanelPlan struct {
	Title string
	Names []string          // locks, in drawing order
	Roles map[string]string // "best peer" or "floor" for the references
	Bold  bool              // a headline panel: our locks, the best peer, the floor
}

// PlanPanels splits a figure's locks (in display order, only those with
// data) into panels of at most maxPanelLines lines, extra of which are
// taken by lines that are not locks (the FIFO floor). For each number of
// servers with locks of ours, a headline panel draws ours with the best
// peer on as many servers (chosen by best) and the raw floor, heavy; when
// ours do not fit in one, they are spread evenly over several panels that
// each repeat the two references. Every other lock is drawn thin in the
// small multiples after them, again spread evenly.
func PlanPanels(locks []LockInfo, extra int, best func(names []string) string) []PanelPlan {
	byName := map[string]LockInfo{}
	var nodes []int
	for _, l := range locks {
		byName[l.Name] = l
		if !slices.Contains(nodes, l.Nodes) {
			nodes = append(nodes, l.Nodes)
		}
	}
	slices.Sort(nodes)
	used := map[string]bool{}
	var out []PanelPlan
	for _, n := range nodes {
		var ours, peers []string
		floor := ""
		for _, l := range locks {
			if l.Nodes != n {
				continue
			}
			switch l.Kind {
			case registry.Ours:
				ours = append(ours, l.Name)
				if _, ok := byName[l.Floor]; ok && floor == "" {
					floor = l.Floor
				}
			case registry.Peer:
				peers = append(peers, l.Name)
			}
		}
		if len(ours) == 0 {
			continue
		}
		roles := map[string]string{}
		var refs []string
		if len(peers) > 0 {
			if p := best(peers); p != "" {
				refs = append(refs, p)
				roles[p] = "best peer"
			}
		}
		if floor != "" {
			refs = append(refs, floor)
			roles[floor] = "floor"
		}
		chunks := spread(ours, MaxPanelLines-extra-len(refs))
		for i, ch := range chunks {
			title := serversText(n) + ": ours, best peer, floor"
			if len(chunks) > 1 {
				title += fmt.Sprintf(" (%d/%d)", i+1, len(chunks))
			}
			out = append(out, PanelPlan{Title: title, Names: append(ch, refs...), Roles: roles, Bold: true})
		}
		for _, name := range append(ours, refs...) {
			used[name] = true
		}
	}
	var rest []string
	for _, l := range locks {
		if !used[l.Name] {
			rest = append(rest, l.Name)
		}
	}
	chunks := spread(rest, MaxPanelLines-extra)
	for i, ch := range chunks {
		title := "the others"
		if len(out) == 0 {
			title = "every lock"
		}
		if len(chunks) > 1 {
			title += fmt.Sprintf(" (%d/%d)", i+1, len(chunks))
		}
		out = append(out, PanelPlan{Title: title, Names: ch})
	}
	return out
}

// spread cuts names into the fewest chunks of at most size names, as even
// as possible, in order.
func spread(names []string, size int) [][]string {
	if len(names) == 0 {
		return nil
	}
	size = max(size, 1)
	n := (len(names) + size - 1) / size
	var out [][]string
	for i := range n {
		lo, hi := i*len(names)/n, (i+1)*len(names)/n
		out = append(out, slices.Clone(names[lo:hi]))
	}
	return out
}

// serversText names a number of servers in a panel's title.
func serversText(n int) string {
	words := []string{1: "one server", 3: "three servers", 5: "five servers"}
	if n > 0 && n < len(words) && words[n] != "" {
		return words[n]
	}
	return fmt.Sprintf("%d servers", n)
}

// panel is one plotting area of a chart with its legend, which is drawn
// beside the plotting area, never over the data.
type panel struct {
	Plot   *plot.Plot
	Legend plot.Legend
	Lines  int                       // lines and bar series drawn
	Labels []string                  // the legend's entries, in order
	Styles map[string]draw.LineStyle // the style each lock was drawn with
}

func newPanel(title string) *panel {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(11)
	p.Add(plotter.NewGrid())
	lg := plot.NewLegend()
	lg.Top, lg.Left = true, true
	lg.TextStyle.Font.Size = vg.Points(10)
	lg.Padding = vg.Points(2)
	return &panel{Plot: p, Legend: lg, Styles: map[string]draw.LineStyle{}}
}

// add draws the lines of one lock (or of the FIFO floor) and gives them a
// legend entry.
func (pn *panel) add(label string, ps ...plot.Plotter) {
	pn.Plot.Add(ps...)
	var thumbs []plot.Thumbnailer
	for _, p := range ps {
		if t, ok := p.(plot.Thumbnailer); ok {
			thumbs = append(thumbs, t)
		}
	}
	pn.Legend.Add(label, thumbs...)
	pn.Labels = append(pn.Labels, label)
	pn.Lines++
}

// legendLabel names a lock in a legend with its role in the panel.
func legendLabel(name string, roles map[string]string) string {
	if r := roles[name]; r != "" {
		return name + " (" + r + ")"
	}
	return name
}

// Chart is one figure: a title over panels that share their axes' ranges.
type Chart struct {
	title  string
	Panels []*panel
}

// shareAxes gives every panel the union of the panels' axis ranges, so
// the small multiples read on one scale. Call it after every line is
// added and before any range of one's own is set.
func (c *Chart) shareAxes() {
	xlo, xhi, ylo, yhi := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, pn := range c.Panels {
		if pn.Lines == 0 {
			continue
		}
		p := pn.Plot
		xlo, xhi = math.Min(xlo, p.X.Min), math.Max(xhi, p.X.Max)
		ylo, yhi = math.Min(ylo, p.Y.Min), math.Max(yhi, p.Y.Max)
	}
	if math.IsInf(xlo, 0) {
		return
	}
	for _, pn := range c.Panels {
		pn.Plot.X.Min, pn.Plot.X.Max = xlo, xhi
		pn.Plot.Y.Min, pn.Plot.Y.Max = ylo, yhi
	}
}

// Check returns an error if a panel draws more than maxPanelLines lines.
func (c *Chart) Check() error {
	for _, pn := range c.Panels {
		if pn.Lines > MaxPanelLines {
			return fmt.Errorf("plot %q: panel %q draws %d lines; at most %d are readable", c.title, pn.Plot.Title.Text, pn.Lines, MaxPanelLines)
		}
	}
	return nil
}

// Size is the chart's width and height.
func (c *Chart) Size() (w, h vg.Length) {
	cols := min(max(len(c.Panels), 1), maxTiles)
	rows := (max(len(c.Panels), 1) + cols - 1) / cols
	return vg.Length(cols) * tileW, titleH + vg.Length(rows)*tileH
}

// tileLayout is where a panel is drawn: its plot (axes and data) and its
// legend, which starts to the right of the plot's data area.
type tileLayout struct {
	plot, Data, Legend vg.Rectangle
}

// Layout places the panels on dc: under the title, left to right and top
// to bottom, each tile's plot on the left and its legend on the right,
// top-aligned with the data area.
func (c *Chart) Layout(dc draw.Canvas) []tileLayout {
	cols := min(max(len(c.Panels), 1), maxTiles)
	top := dc.Max.Y - titleH
	var out []tileLayout
	for i, pn := range c.Panels {
		r, col := i/cols, i%cols
		tile := vg.Rectangle{
			Min: vg.Point{X: dc.Min.X + vg.Length(col)*tileW + tilePad, Y: top - vg.Length(r+1)*tileH + tilePad},
			Max: vg.Point{X: dc.Min.X + vg.Length(col+1)*tileW - tilePad, Y: top - vg.Length(r)*tileH - tilePad},
		}
		pr := tile
		pr.Max.X -= legendW
		data := pn.Plot.DataCanvas(draw.Canvas{Canvas: dc.Canvas, Rectangle: pr}).Rectangle
		lg := vg.Rectangle{Min: vg.Point{X: pr.Max.X + tilePad, Y: data.Min.Y}, Max: vg.Point{X: tile.Max.X, Y: data.Max.Y}}
		out = append(out, tileLayout{plot: pr, Data: data, Legend: lg})
	}
	return out
}

// draw draws the chart on dc: its title across the top, then the panels
// as layout places them.
func (c *Chart) draw(dc draw.Canvas) {
	dc.SetColor(rgb(0xffffff))
	dc.Fill(dc.Rectangle.Path())
	ts := text.Style{Font: font.From(plot.DefaultFont, vg.Points(14)), Handler: plot.DefaultTextHandler, XAlign: draw.XCenter, YAlign: draw.YTop}
	dc.FillText(ts, vg.Point{X: dc.Center().X, Y: dc.Max.Y - tilePad}, c.title)
	for i, tl := range c.Layout(dc) {
		pn := c.Panels[i]
		pn.Plot.Draw(draw.Canvas{Canvas: dc.Canvas, Rectangle: tl.plot})
		pn.Legend.Draw(draw.Canvas{Canvas: dc.Canvas, Rectangle: tl.Legend})
	}
}

// Save writes the chart as dir/stem.png and dir/stem.svg and returns the
// svg's base name.
func (c *Chart) Save(dir, stem string) (string, error) {
	if err := c.Check(); err != nil {
		return "", err
	}
	w, h := c.Size()
	for _, ext := range []string{"png", "svg"} {
		cv, err := draw.NewFormattedCanvas(w, h, ext)
		if err != nil {
			return "", fmt.Errorf("plot %s.%s: %w", stem, ext, err)
		}
		c.draw(draw.New(cv))
		if err := saveCanvas(cv, filepath.Join(dir, stem+"."+ext)); err != nil {
			return "", fmt.Errorf("plot %s.%s: %w", stem, ext, err)
		}
	}
	return stem + ".svg", nil
}

func saveCanvas(cv vg.CanvasWriterTo, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := cv.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
