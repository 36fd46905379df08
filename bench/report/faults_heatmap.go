package report

import (
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/locklab/locklab/bench/faults"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// heatmap draws the matrix as faults_heatmap.png and .svg: locks down,
// faults across, each cell coloured by its share of unsafe runs (green
// none, red all), stuck-only cells in purple, cells not run in grey, and
// labelled with its count.
func (fr *FaultReport) heatmap(dir string) error {
	const (
		labelW = 1.6 * vg.Inch
		cellW  = 0.95 * vg.Inch
		cellH  = 0.28 * vg.Inch
		headH  = 0.55 * vg.Inch
		pad    = 0.1 * vg.Inch
	)
	cols, rows := len(fr.Setup.Schedules), len(fr.Setup.Impls)
	w := max(labelW+vg.Length(cols)*cellW+2*pad, 7*vg.Inch)
	h := headH + vg.Length(rows+2)*cellH + 2*pad
	foot := []string{"unsafe runs of the runs judged; stuck: a waiter past the bound while nobody held the lock;",
		"refused to run: the lock refused a server that evicts keys"}
	if slices.ContainsFunc(fr.Setup.Schedules, func(s *faults.Schedule) bool { return s.Modeled }) {
		foot[1] += "; * modeled"
	}
	if slices.ContainsFunc(fr.Cells, func(c *faults.CellResult) bool { return c.NotRun == faults.NotApplicable }) {
		foot[1] += "; –: the fault does not apply to the lock's system"
	}
	draw1 := func(dc draw.Canvas) {
		dc.FillPolygon(color.White, rect(0, 0, w, h))
		sty := func(size vg.Length, x text.XAlignment) draw.TextStyle {
			return draw.TextStyle{Color: color.Black, Font: font.From(plot.DefaultFont, size), Handler: plot.DefaultTextHandler,
				XAlign: x, YAlign: draw.YCenter}
		}
		top := h - pad - headH
		for j, s := range fr.Setup.Schedules {
			x := pad + labelW + vg.Length(j)*cellW + cellW/2
			t := fmt.Sprintf("%d. %s", s.N, s.ID)
			if s.Modeled {
				t += "*"
			}
			dc.FillText(sty(8, draw.XCenter), vg.Point{X: x, Y: top + headH/2}, t)
		}
		for i, im := range fr.Setup.Impls {
			y := top - vg.Length(i+1)*cellH
			dc.FillText(sty(8, draw.XRight), vg.Point{X: pad + labelW - 6, Y: y + cellH/2}, im.Name)
			for j, s := range fr.Setup.Schedules {
				c := fr.cell(im.Name, s.ID)
				x := pad + labelW + vg.Length(j)*cellW
				dc.FillPolygon(cellColor(c), rect(x+1, y+1, x+cellW-1, y+cellH-1))
				dc.FillText(sty(7, draw.XCenter), vg.Point{X: x + cellW/2, Y: y + cellH/2}, heatLabel(c))
			}
		}
		for i, f := range foot {
			dc.FillText(sty(7, draw.XLeft), vg.Point{X: pad, Y: pad + vg.Length(2-i)*cellH*0.6}, f)
		}
	}
	png := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(144))
	draw1(draw.New(png))
	if err := writeCanvas(filepath.Join(dir, "faults_heatmap.png"), vgimg.PngCanvas{Canvas: png}); err != nil {
		return err
	}
	svg := vgsvg.New(w, h)
	draw1(draw.New(svg))
	return writeCanvas(filepath.Join(dir, "faults_heatmap.svg"), svg)
}

func writeCanvas(path string, c io.WriterTo) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

func rect(x0, y0, x1, y1 vg.Length) []vg.Point {
	return []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}
}

func heatLabel(c *faults.CellResult) string {
	switch {
	case c.NotRun == faults.NotApplicable:
		return "–"
	case c.NotRun != "":
		return "not run"
	case c.Runs == 0:
		return "–"
	case c.Unsafe > 0:
		return fmt.Sprintf("%d/%d", c.Unsafe, c.Runs)
	case c.Stuck > 0:
		return fmt.Sprintf("%d/%d stuck", c.Stuck, c.Runs)
	case c.Declined == c.Runs:
		return "refused to run"
	}
	return fmt.Sprintf("0/%d", c.Runs)
}

// cellColor goes from green (no unsafe run) through yellow to red (every
// run unsafe).
func cellColor(c *faults.CellResult) color.Color {
	switch {
	case c.NotRun != "" || c.Runs == 0:
		return color.RGBA{0xdd, 0xdd, 0xdd, 0xff}
	case c.Unsafe == 0 && c.Stuck > 0:
		return color.RGBA{0xc9, 0xa8, 0xd8, 0xff}
	case c.Unsafe == 0:
		return color.RGBA{0x8c, 0xd1, 0x7d, 0xff}
	}
	f := float64(c.Unsafe) / float64(c.Runs)
	lerp := func(a, b uint8, t float64) uint8 { return uint8(float64(a) + (float64(b)-float64(a))*t) }
	yellow, red := [3]uint8{0xf5, 0xd0, 0x4c}, [3]uint8{0xe1, 0x57, 0x59}
	return color.RGBA{lerp(yellow[0], red[0], f), lerp(yellow[1], red[1], f), lerp(yellow[2], red[2], f), 0xff}
}
