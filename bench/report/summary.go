package report

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/locklab/locklab/bench/registry"
	"github.com/locklab/locklab/bench/speed"
)

// The summary opens report.md: for an engineer choosing a lock, one line
// per scenario and figure (and under it, per cell and figure), saying who
// leads and how each of our locks stands against the best peer and
// against the floor. Every figure in it is one
// of the tables' (the same row, the same formatting), except the ratio to
// the best peer, which is a same-round ratio like the tables' ratios to
// redsync and is kept in summary.json's per-round figures.

// figure is one figure the summary compares.
type figure struct {
	name   string                           // as the summary names it
	higher bool                             // higher is better
	med    func(speed.Row) float64          // the table's median
	show   func(speed.Row) string           // the table's formatting of it
	round  func(speed.RoundFigures) float64 // per round, for same-round ratios
	floor  func(speed.Row) *float64         // the table's ratio to the floor
}

var (
	figOps = figure{name: "acq/s", higher: true,
		med: func(r speed.Row) float64 { return r.OpsPerSec }, show: fmtOps,
		round: func(f speed.RoundFigures) float64 { return f.OpsPerSec },
		floor: func(r speed.Row) *float64 { return r.OpsFloorRatio }}
	figP99 = figure{name: "wait p99",
		med: func(r speed.Row) float64 { return r.WaitP99Us }, show: func(r speed.Row) string { return fmtUs(r.WaitP99Us) },
		round: func(f speed.RoundFigures) float64 { return f.WaitP99Us },
		floor: func(r speed.Row) *float64 { return r.WaitP99FloorRatio }}
)

// FiguresOf returns what the summary compares in cell c: throughput
// everywhere (pairs/s for fresh keys), and the wait p99 where clients
// queue for one key.
func FiguresOf(c speed.Cell) []figure {
	ops := figOps
	if c.Keys == 0 {
		ops.name = "pairs/s"
	}
	if c.Keys == 1 && c.Clients >= 2 {
		return []figure{figP99, ops}
	}
	return []figure{ops}
}

// summaryGroup is one table of the summary: the locks on one number of
// servers.
type summaryGroup struct {
	title   string
	nodes   int
	floor   string
	receipt string // the floor whose release is safe to send twice
	again   string // the floor run a second time, the A/A control; "" if none
	client  string // the kind of client of its locks (registry.ClientKinds)
}

// summaryGroups: a lock run on AutoPipeliners (-client autopipe) is
// compared with the locks and floors run on them too.
var summaryGroups = []summaryGroup{
	{"One server", 1, "raw", "raw+receipt", "raw-again", registry.Plain},
	{"Five servers", 5, "raw-5", "raw-5+receipt", "", registry.Plain},
	{"One server, on AutoPipeliners", 1, "raw@autopipe", "raw+receipt@autopipe", "raw-again@autopipe", registry.AutoPipe},
	{"Five servers, on AutoPipeliners", 5, "raw-5@autopipe", "raw-5+receipt@autopipe", "", registry.AutoPipe},
}

// summaryLine is one line of a summary table, kept as values so a test can
// check them against the tables.
type summaryLine struct {
	cell     speed.Cell
	fig      figure
	leader   string    // impl
	bestPeer string    // impl, "" if no peer ran
	floor    string    // impl, "" if the floor did not run
	receipt  string    // impl, "" if the floor with receipts did not run
	aa       []float64 // the A/A control's same-round ratios to the floor, sorted; nil if it did not run
	ours     []summaryOurs
}

type summaryOurs struct {
	impl      string
	present   bool
	peerRatio *float64 // same-round median of ours / best peer's
	ahead     int      // rounds in which ours did better than the best peer
	rounds    int      // rounds in which both ran
	floor     *float64 // the table's ratio to the floor
}

// summaryLines builds the lines of one group.
func (res *Results) summaryLines(g summaryGroup) (ours []string, lines []summaryLine) {
	for _, im := range res.impls {
		if im.Nodes == g.nodes && im.Kind == registry.Ours && im.ClientKind() == g.client {
			ours = append(ours, im.Name)
		}
	}
	if len(ours) == 0 {
		return nil, nil
	}
	for _, c := range res.Cells {
		rows := map[string]speed.Row{}
		for _, im := range res.impls {
			if im.Nodes != g.nodes || im.ClientKind() != g.client {
				continue
			}
			if r, ok := res.RowOf(im.Name, c); ok {
				rows[im.Name] = r
			}
		}
		for _, fig := range FiguresOf(c) {
			ln := summaryLine{cell: c, fig: fig}
			if _, ok := rows[g.floor]; ok {
				ln.floor = g.floor
			}
			if _, ok := rows[g.receipt]; ok {
				ln.receipt = g.receipt
			}
			if _, ok := rows[g.again]; ok && ln.floor != "" && fig.higher {
				ln.aa = speed.SameRoundRatios(speed.PerRound(res.runsOf(g.again, c), fig.round), speed.PerRound(res.runsOf(g.floor, c), fig.round))
			}
			for _, im := range res.impls {
				r, ok := rows[im.Name]
				if !ok || (im.Kind != registry.Ours && im.Kind != registry.Peer) {
					continue
				}
				if ln.leader == "" || fig.better(r, rows[ln.leader]) {
					ln.leader = im.Name
				}
				if im.Kind == registry.Peer && (ln.bestPeer == "" || fig.better(r, rows[ln.bestPeer])) {
					ln.bestPeer = im.Name
				}
			}
			if ln.leader == "" {
				continue
			}
			for _, name := range ours {
				o := summaryOurs{impl: name}
				if r, ok := rows[name]; ok {
					o.present = true
					o.floor = fig.floor(r)
					if ln.bestPeer != "" {
						ours, peer := res.runsOf(name, c), res.runsOf(ln.bestPeer, c)
						o.peerRatio = speed.RoundRatio(ours, peer, fig.round)
						o.ahead, o.rounds = aheadIn(speed.PerRound(ours, fig.round), speed.PerRound(peer, fig.round), fig.higher)
					}
				}
				ln.ours = append(ln.ours, o)
			}
			lines = append(lines, ln)
		}
	}
	return ours, lines
}

// aheadIn counts the rounds that have both figures, and those in which
// vals did better than base (higher, or lower when !higher).
func aheadIn(vals, base map[int]float64, higher bool) (ahead, rounds int) {
	for round, v := range vals {
		b, ok := base[round]
		if !ok {
			continue
		}
		rounds++
		if higher && v > b || !higher && v < b {
			ahead++
		}
	}
	return ahead, rounds
}

// better reports whether a's figure beats b's.
func (f figure) better(a, b speed.Row) bool {
	if f.higher {
		return f.med(a) > f.med(b)
	}
	return f.med(a) < f.med(b)
}

// Summary renders the opening summary, one screen: per scenario its
// headline cell (headlineCells), then the same lines for every cell under
// "Every cell".
func (res *Results) Summary() string {
	var b bytes.Buffer
	b.WriteString("## Summary\n\n")
	b.WriteString("One line per scenario and figure, at its headline cell (the most clients; on one key the longest hold, " +
		"where waiting in line shows; over many keys the shortest, where the lock's own cost shows); every cell is under *Every cell* below. " +
		"The **leader** has the best figure among the locks on the same number of servers, ours and the peers'. " +
		"Each of our locks shows **× best peer · × floor**, medians over rounds of same-round ratios, and **(ahead k/n)**, " +
		"the rounds in which it beat the best peer: a ratio near 1 with rounds on both sides is a tie within the machine's noise. " +
		"The **floor** is `raw` (`raw-5`), the bare go-redis SET NX PX and EVALSHA compare-and-delete; " +
		"the **floor with receipts**, `raw+receipt` (`raw-5+receipt`), also answers right when a release is sent twice, " +
		"as our locks do and no peer does, and its × floor is what that costs. " +
		"**A/A** beside the floor is the control: `raw-again`, the floor run a second time in each round, over the floor, lowest and highest round; " +
		"it is how far apart this machine puts two runs of the same code, so a ratio inside it shows no difference. " +
		"A wait p99's floor is the FIFO floor, (N−1) × (the lock's own held p50 + handoff p50). ↑: higher is better; ↓: lower.\n\n")
	if ln := res.mach.RedisBenchmark.Line(); ln != "" {
		b.WriteString(ln + "\n\n")
	}
	groups := make([]summaryTable, len(summaryGroups))
	for i, g := range summaryGroups {
		groups[i].title = g.title
		groups[i].ours, groups[i].lines = res.summaryLines(g)
	}
	head := speed.HeadlineCells(res.Cells)
	res.summaryTables(&b, groups, func(c speed.Cell) bool { return slices.Contains(head, c) })
	if len(head) < len(res.Cells) {
		b.WriteString("## Every cell\n\n")
		res.summaryTables(&b, groups, func(speed.Cell) bool { return true })
	}
	return b.String()
}

// summaryTable is one group's summary: its title, our locks in it, and
// its lines for every cell.
type summaryTable struct {
	title string
	ours  []string
	lines []summaryLine
}

// summaryTables writes, for each group of locks, a table of its lines for
// the cells that keep.
func (res *Results) summaryTables(b *bytes.Buffer, groups []summaryTable, keep func(speed.Cell) bool) {
	for _, g := range groups {
		ours := g.ours
		lines := slices.DeleteFunc(slices.Clone(g.lines), func(ln summaryLine) bool { return !keep(ln.cell) })
		if len(lines) == 0 {
			continue
		}
		fmt.Fprintf(b, "### %s\n\n", g.title)
		b.WriteString("| cell | figure | leader | best peer | floor | floor with receipts |")
		for _, o := range ours {
			b.WriteString(" " + o + " |")
		}
		b.WriteString("\n|---|---|---|---|---|---|" + strings.Repeat("---:|", len(ours)) + "\n")
		for _, ln := range lines {
			arrow := "↓"
			if ln.fig.higher {
				arrow = "↑"
			}
			fmt.Fprintf(b, "| %s | %s %s | %s | %s | %s | %s |", SummaryLabel(ln.cell), ln.fig.name, arrow,
				res.named(ln.leader, ln.cell, ln.fig), res.named(ln.bestPeer, ln.cell, ln.fig), res.floorText(ln), res.receiptText(ln))
			for _, o := range ln.ours {
				b.WriteString(" " + o.text() + " |")
			}
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
}

// named prints an impl with its figure, as the table shows it.
func (res *Results) named(impl string, c speed.Cell, f figure) string {
	if impl == "" {
		return "–"
	}
	r, _ := res.RowOf(impl, c)
	return impl + " " + f.show(r)
}

func (res *Results) floorText(ln summaryLine) string {
	if ln.fig.name == figP99.name {
		return "FIFO, each lock's own"
	}
	t := res.named(ln.floor, ln.cell, ln.fig)
	if len(ln.aa) > 0 {
		t += fmt.Sprintf(" (A/A %.2f–%.2f×)", ln.aa[0], ln.aa[len(ln.aa)-1])
	}
	return t
}

// receiptText is the floor with receipts and its ratio to the floor, as
// its table row shows them.
func (res *Results) receiptText(ln summaryLine) string {
	if ln.fig.name == figP99.name || ln.receipt == "" {
		return "–"
	}
	r, _ := res.RowOf(ln.receipt, ln.cell)
	return res.named(ln.receipt, ln.cell, ln.fig) + " (" + FmtRatio(ln.fig.floor(r)) + ")"
}

func (o summaryOurs) text() string {
	if !o.present {
		return "–"
	}
	ratio := FmtRatio(o.peerRatio)
	if o.rounds > 1 {
		ratio += fmt.Sprintf(" (ahead %d/%d)", o.ahead, o.rounds)
	}
	return ratio + " · " + FmtRatio(o.floor)
}

// SummaryLabel names a cell for a reader: "contended, 32 clients, hold 1ms".
func SummaryLabel(c speed.Cell) string {
	parts := []string{c.Scenario}
	if c.Keys > 1 {
		parts = append(parts, fmt.Sprintf("%d clients over %d keys", c.Clients, c.Keys))
	} else if c.Clients > 1 {
		parts = append(parts, fmt.Sprintf("%d clients", c.Clients))
	}
	if c.Keys > 0 {
		parts = append(parts, "hold "+speed.FmtHold(c.Hold))
	}
	if c.Server != "" {
		parts = append(parts, "on "+c.Server)
	}
	return strings.Join(parts, ", ")
}

// RowOf returns impl's row in cell c.
func (res *Results) RowOf(impl string, c speed.Cell) (speed.Row, bool) {
	i := slices.IndexFunc(res.Rows, func(r speed.Row) bool {
		return r.Impl == impl && r.Scenario == c.Scenario && r.Clients == c.Clients &&
			r.HoldUs == float64(c.Hold.Microseconds()) && r.Server == c.Server
	})
	if i < 0 {
		return speed.Row{}, false
	}
	return res.Rows[i], true
}

// runsOf returns impl's runs in cell c.
func (res *Results) runsOf(impl string, c speed.Cell) []*speed.RunResult {
	var out []*speed.RunResult
	for _, r := range res.runs {
		if r.Spec.Impl.Name == impl && r.Spec.Cell == c {
			out = append(out, r)
		}
	}
	return out
}

// firstServer is the first -server kind ("" without -server).
func (res *Results) firstServer() string {
	if len(res.cfg.Servers) == 0 {
		return ""
	}
	return res.cfg.Servers[0]
}

// serverFigures are the figures the server comparison shows, each with
// its row's median and its per-round value for same-round ratios.
var serverFigures = []struct {
	name  string
	show  func(float64) string
	med   func(speed.Row) float64
	round func(speed.RoundFigures) float64
}{
	{"acq/s", func(v float64) string { return fmt.Sprintf("%.0f", v) },
		func(r speed.Row) float64 { return r.OpsPerSec }, func(f speed.RoundFigures) float64 { return f.OpsPerSec }},
	{"wait p99", fmtUs, func(r speed.Row) float64 { return r.WaitP99Us }, func(f speed.RoundFigures) float64 { return f.WaitP99Us }},
	{"server CPU/acq", fmtUs, func(r speed.Row) float64 { return r.ServerCPUUsPerOp }, func(f speed.RoundFigures) float64 { return f.ServerCPUUsPerOp }},
}

// ServerSection compares the kinds of -server (Valkey/Redis with -server
// redis,valkey): per lock and cell, each figure on the first kind, on
// the other, and the median over rounds of their same-round ratio. It is
// empty with one kind.
func (res *Results) ServerSection() string {
	if len(res.cfg.Servers) < 2 {
		return ""
	}
	var b bytes.Buffer
	base := res.cfg.Servers[0]
	for _, other := range res.cfg.Servers[1:] {
		fmt.Fprintf(&b, "## %s / %s\n\n", serverTitle(other), serverTitle(base))
		fmt.Fprintf(&b, "Every lock that runs on Redis, ours, the peers' and the floors, ran in every round on both kinds of server, "+
			"the kinds' order rotated each round; each kind had as many servers of its own, started the same way, and its own violation counter. "+
			"**×** is the median over rounds of the same-round ratio %s / %s: above 1 means a higher figure on %s "+
			"(better for acq/s, worse for wait p99 and server CPU). Server CPU/acq includes the violation counter's INCR and DECR on both.\n\n",
			serverTitle(other), serverTitle(base), serverTitle(other))
		b.WriteString("| lock | cell |")
		for _, f := range serverFigures {
			fmt.Fprintf(&b, " %s %s | %s | × |", f.name, serverTitle(base), serverTitle(other))
		}
		b.WriteString("\n|---|---|" + strings.Repeat("---:|---:|---:|", len(serverFigures)) + "\n")
		for _, im := range res.impls {
			for _, c := range res.Cells {
				if c.Server != base {
					continue
				}
				oc := c
				oc.Server = other
				rb, ok1 := res.RowOf(im.Name, c)
				ro, ok2 := res.RowOf(im.Name, oc)
				if !ok1 || !ok2 {
					continue
				}
				fmt.Fprintf(&b, "| %s | %s |", im.Name, SummaryLabel(speed.Cell{Scenario: c.Scenario, Clients: c.Clients, Hold: c.Hold, Keys: c.Keys}))
				for _, f := range serverFigures {
					ratio := speed.RoundRatio(res.runsOf(im.Name, oc), res.runsOf(im.Name, c), f.round)
					fmt.Fprintf(&b, " %s | %s | %s |", f.show(f.med(rb)), f.show(f.med(ro)), FmtRatio(ratio))
				}
				b.WriteString("\n")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// serverTitle names a -server kind in prose: "Redis", "Valkey".
func serverTitle(kind string) string {
	if kind == "" {
		return kind
	}
	return strings.ToUpper(kind[:1]) + kind[1:]
}
