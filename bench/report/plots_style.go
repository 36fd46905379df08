package report

import (
	"image/color"

	"github.com/locklab/locklab/bench/registry"

	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// lockStyle is a lock's colour and dash pattern, the same in every plot.
type lockStyle struct {
	Color  color.Color
	Dashes []vg.Length
}

// Line widths: the headline panels' lines (our locks, the best peer, the
// floor) are drawn heavier than the small multiples' lines.
var (
	boldWidth = vg.Points(2.4)
	thinWidth = vg.Points(1.4)
)

// kindPalettes give each kind of lock its own colours, so that a reader
// tells ours from the peers from the floors at a glance: ours cool and
// saturated, the peers warm, the floors black and greys, the naive locks
// pinks. A kind's locks take its colours in display order, then the same
// colours again with the next dash pattern, so no two locks share both.
var kindPalettes = map[registry.Kind][]color.Color{
	registry.Ours: {
		rgb(0x1f77b4), rgb(0x2ca02c), rgb(0x9467bd), rgb(0x17becf), rgb(0x393b79), rgb(0x637939),
	},
	registry.Peer:  {rgb(0xff7f0e), rgb(0xd62728), rgb(0x8c564b), rgb(0xbcbd22)},
	registry.Floor: {rgb(0x000000), rgb(0x6b6b6b), rgb(0xa8a8a8)},
	registry.Naive: {rgb(0xe377c2), rgb(0xf7a8d0)},
}

// FifoStyle draws the FIFO floor: black dots, which no lock uses (the
// floors' dashes are solid, long and short dashes).
var FifoStyle = draw.LineStyle{Color: rgb(0x000000), Width: vg.Points(2), Dashes: []vg.Length{vg.Points(1.5), vg.Points(3)}}

func rgb(v uint32) color.Color {
	return color.RGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 0xff}
}

// lockStyles maps a lock's name to its style. It is built once per report
// from every registered lock (newLockStyles(registeredLocks())), not from
// the locks of the run, so a lock keeps its colour and dashes in every
// plot of a report and in every report of the same build.
type lockStyles map[string]lockStyle

// LockInfo is what the plots need to know of a lock: its name, whose it
// is, how many servers it uses and the raw floor it is measured against.
type LockInfo struct {
	Name  string
	Kind  registry.Kind
	Nodes int
	Floor string
}

func infoOf(im *registry.Lock) LockInfo {
	return LockInfo{Name: im.Name, Kind: im.Kind, Nodes: im.Nodes, Floor: im.Floor()}
}

// RegisteredLocks returns every registered lock in display order.
func RegisteredLocks() []LockInfo {
	var names []string
	for n := range registry.Locks {
		names = append(names, n)
	}
	var out []LockInfo
	for _, n := range registry.Sorted(names) {
		out = append(out, infoOf(registry.Locks[n]))
	}
	return out
}

// NewLockStyles gives each lock of locks (in display order) a style: the
// i-th lock of a kind takes colour i mod n of the kind's palette and dash
// pattern i div n. A lock of an unknown kind is styled as a naive one.
func NewLockStyles(locks []LockInfo) lockStyles {
	st := lockStyles{}
	seen := map[registry.Kind]int{}
	for _, l := range locks {
		if _, dup := st[l.Name]; dup {
			continue
		}
		k := l.Kind
		if kindPalettes[k] == nil {
			k = registry.Naive
		}
		pal, i := kindPalettes[k], seen[k]
		seen[k]++
		st[l.Name] = lockStyle{Color: pal[i%len(pal)], Dashes: plotutil.Dashes(i / len(pal))}
	}
	return st
}

// line returns name's line style, heavy when bold. A name without a style
// (a lock added to the run after the styles were made) is drawn grey.
func (st lockStyles) line(name string, bold bool) draw.LineStyle {
	s, ok := st[name]
	if !ok {
		s = lockStyle{Color: rgb(0x808080)}
	}
	w := thinWidth
	if bold {
		w = boldWidth
	}
	return draw.LineStyle{Color: s.Color, Dashes: s.Dashes, Width: w}
}
