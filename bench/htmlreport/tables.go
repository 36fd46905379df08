package htmlreport

import (
	"fmt"
	"slices"
	"sort"
)

// Scenario tables: per scenario, its headline cell with our locks, the
// best peer of each side (one server, five, beyond Redis) and the floors;
// every lock in every cell under it, folded.
var scenarioOrder = []string{"contended", "keys", "uncontended", "rtt-contended", "rtt-uncontended"}

func (res *results) tables() []tableView {
	var scs []string
	for _, r := range res.rows {
		if !slices.Contains(scs, r.Scenario) {
			scs = append(scs, r.Scenario)
		}
	}
	rank := func(s string) int {
		if i := slices.Index(scenarioOrder, s); i >= 0 {
			return i
		}
		return len(scenarioOrder)
	}
	sort.SliceStable(scs, func(i, j int) bool { return rank(scs[i]) < rank(scs[j]) })
	// With -server redis,valkey, the tables of each kind of server.
	var servers []string
	for _, r := range res.rows {
		if !slices.Contains(servers, r.Server) {
			servers = append(servers, r.Server)
		}
	}
	var out []tableView
	for _, srv := range servers {
		rows := slices.DeleteFunc(slices.Clone(res.rows), func(r row) bool { return r.Server != srv })
		for _, sc := range scs {
			c, keys, ok := headline(rows, sc)
			if !ok {
				continue
			}
			t := tableView{Title: c.label(keys)}
			all := &tableView{Title: "every lock, every cell of " + sc}
			if srv != "" {
				all.Title += " on " + srv
			}
			contended := false
			type side struct {
				nodes  int
				others bool // beyond Redis
			}
			peer := map[side]*row{} // the best peer of each side
			for i := range rows {
				r := &rows[i]
				if r.Scenario == sc && r.FIFOFloorUs > 0 {
					contended = true
				}
				l := res.lock(r.Impl)
				if k := (side{l.Nodes, l.System != "redis"}); r.key() == c && l.Kind == KindPeer {
					if p := peer[k]; p == nil || r.OpsPerSec > p.OpsPerSec {
						peer[k] = r
					}
				}
			}
			t.Head, all.Head = tableHead(contended, false), tableHead(contended, true)
			for _, r := range rows {
				if r.Scenario != sc {
					continue
				}
				l := res.lock(r.Impl)
				all.Rows = append(all.Rows, tableRowView{l.Kind, tableRow(r, l.Kind, contended, true)})
				if r.key() != c {
					continue
				}
				p := peer[side{l.Nodes, l.System != "redis"}]
				best := p != nil && p.Impl == r.Impl
				if l.Kind == KindOurs || l.Kind == KindFloor || best {
					t.Rows = append(t.Rows, tableRowView{l.Kind, tableRow(r, l.Kind, contended, false)})
				}
			}
			t.All = all
			out = append(out, t)
		}
	}
	return out
}

func tableHead(contended, cell bool) []string {
	h := []string{"lock", "kind"}
	if cell {
		h = append(h, "N", "hold")
	}
	h = append(h, "ops/s", "× floor", "wait p50", "p99")
	if contended {
		h = append(h, "p99 × FIFO floor")
	}
	return append(h, "Jain", "Redis cmds/acq", "gave up", "violations")
}

func tableRow(r row, kind string, contended, cell bool) []string {
	ratio := func(p *float64) string {
		if p == nil {
			return "–"
		}
		return fmt.Sprintf("%.2f×", *p)
	}
	out := []string{r.Impl, kind}
	if cell {
		out = append(out, fmt.Sprint(r.Clients), fmtHoldUs(r.HoldUs))
	}
	out = append(out, fmtOps(r.OpsPerSec), ratio(r.OpsFloorRatio), fmtUs(r.WaitP50Us), fmtUs(r.WaitP99Us))
	if contended {
		out = append(out, ratio(r.WaitP99FloorRatio))
	}
	return append(out, fmt.Sprintf("%.3f", r.Jain), fmt.Sprintf("%.2f", r.RedisCmdsPerOp), fmt.Sprint(r.GaveUp), fmt.Sprint(r.Violations))
}
