package speed

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/locklab/locklab/bench/env"
	"github.com/locklab/locklab/bench/registry"
)

// Scenario names as they appear in rows: the rtt scenario yields two.
const (
	rowRTTUncontended = "rtt-uncontended"
	RowRTTContended   = "rtt-contended"
)

// Cell is one (scenario, clients, hold) configuration; every implementation
// runs it once per round.
type Cell struct {
	Scenario string        // row scenario name (uncontended, contended, keys, rtt-*)
	Clients  int           // contending clients
	Hold     time.Duration // time each holder keeps the lock
	Keys     int           // keys in play; 0 means a fresh key per pair
	Rtt      time.Duration // latency added each way; 0 for direct connections
	Server   string        // kind of Redis server (-server); "" with one kind and no -server
	Autopipe bool          // the locks' runs on AutoPipeliners run here too (autopipeCell)
}

func (c Cell) String() string {
	s := fmt.Sprintf("%s c=%d hold=%s", c.Scenario, c.Clients, FmtHold(c.Hold))
	if c.Scenario == ScKeys {
		s += fmt.Sprintf(" keys=%d", c.Keys)
	}
	if c.Rtt > 0 {
		s += fmt.Sprintf(" rtt=%s", c.Rtt)
	}
	if c.Server != "" {
		s += " on " + c.Server
	}
	return s
}

// ID is the cell's file-name stem, e.g. "contended_c32_h1ms".
func (c Cell) ID() string {
	return fmt.Sprintf("%s_c%d_h%s", c.Scenario, c.Clients, FmtHold(c.Hold)) + serverSuffix(c.Server)
}

// FmtHold prints a hold as in the flag ("0", "1ms", "500µs" as "500us").
func FmtHold(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	return strings.ReplaceAll(d.String(), "µ", "u")
}

// HoldsOverlap reports whether clients in c can hold the lock at the same
// time: only over many keys. On one key (or a fresh key per pair, with one
// client) a working lock has one holder at a time. holdFor sleeps
// differently in the two cases (see hold_linux.go).
func (c Cell) HoldsOverlap() bool { return c.Keys > 1 }

// Cells expands the configuration into the cells to run, in a fixed order.
//   - uncontended: one client, hold 0, a fresh key per pair.
//   - contended: every -clients value x every -hold, one key.
//   - keys: every -keys-clients value x every -hold, over -keys keys.
//   - rtt: rtt-uncontended (as uncontended) and rtt-contended with
//     rttClients clients (the largest -clients value up to 8) x every
//     -hold, through the latency proxy. With a round trip of milliseconds
//     each hand-off takes several, so 32 clients would wait about as long
//     as a short run lasts and measure the run's length, not the lock.
//
// With c.headline (the default plan) only each scenario's headline cell
// (headlineCells) is kept.
func Cells(c *Config) []Cell {
	var out []Cell
	maxN := rttClients(c.Clients)
	for _, sc := range c.Scenarios {
		switch sc {
		case ScUncontended:
			out = append(out, Cell{Scenario: ScUncontended, Clients: 1})
		case ScContended:
			for _, n := range c.Clients {
				for _, h := range c.Holds {
					out = append(out, Cell{Scenario: ScContended, Clients: n, Hold: h, Keys: 1})
				}
			}
		case ScKeys:
			for _, n := range c.KeysCl {
				for _, h := range c.Holds {
					out = append(out, Cell{Scenario: ScKeys, Clients: n, Hold: h, Keys: c.Keys})
				}
			}
		case scRTT:
			out = append(out, Cell{Scenario: rowRTTUncontended, Clients: 1, Rtt: c.Rtt})
			if maxN >= 2 {
				for _, h := range c.Holds {
					out = append(out, Cell{Scenario: RowRTTContended, Clients: maxN, Hold: h, Keys: 1, Rtt: c.Rtt})
				}
			}
		}
	}
	head := HeadlineCells(out)
	for i := range out {
		out[i].Autopipe = autopipeCell(out[i], head, c.Client)
	}
	if c.Headline {
		out = HeadlineCells(out)
	}
	return withServers(out, c.Servers)
}

// rttClients returns the largest n in clients with n <= 8, or the
// smallest if none is.
func rttClients(clients []int) int {
	best := 0
	for _, n := range clients {
		if n <= 8 {
			best = max(best, n)
		}
	}
	if best == 0 {
		return slices.Min(clients)
	}
	return best
}

// Step is one run: one implementation in one cell in one round.
type Step struct {
	Round int
	Cell  Cell
	Impl  *registry.Lock
}

// Steps orders the runs: rounds outermost, then cells; within a cell the
// implementations run back to back (so same-round ratios compare runs made
// moments apart), in an order rotated by one place each round so that no
// implementation always runs first or last. With -server redis,valkey a
// cell's runs on each kind of server come one kind after the other, the
// kinds' order rotated the same way, and the locks on other systems run on
// the first kind only (runsOn).
func Steps(rounds int, cs []Cell, impls []*registry.Lock) []Step {
	var out []Step
	for r := range rounds {
		for _, c := range rotateServers(cs, r) {
			for i := range impls {
				im := impls[(i+r)%len(impls)]
				if im.Scenarios != nil && !slices.Contains(im.Scenarios, c.Scenario) || !runsOn(im, c, cs) || im.Pipelined && !c.Autopipe {
					continue
				}
				out = append(out, Step{Round: r, Cell: c, Impl: im})
			}
		}
	}
	return out
}

// PerRunOverhead estimates the setup and teardown of one run (clients,
// warm-up, INFO snapshots, cleanup), for the plan printed at start.
const PerRunOverhead = 60 * time.Millisecond

// Estimate returns the planned wall time of the steps.
func Estimate(ss []Step, d time.Duration) time.Duration {
	return time.Duration(len(ss)) * (d + PerRunOverhead)
}

// DropLoneControl leaves raw-again out of a run of one round (the -quick
// preset) unless -impls names it: one round gives one ratio, not a spread.
func DropLoneControl(impls []*registry.Lock, cfg *Config) []*registry.Lock {
	if cfg.Rounds > 1 || len(cfg.Impls) > 0 {
		return impls
	}
	return slices.DeleteFunc(impls, func(im *registry.Lock) bool { return im.Name == "raw-again" })
}

// withServers returns cs once per server kind, each cell's kinds next to
// each other (cs as they are with no -server).
func withServers(cs []Cell, kinds []string) []Cell {
	if len(kinds) == 0 {
		return cs
	}
	var out []Cell
	for _, c := range cs {
		for _, k := range kinds {
			c.Server = k
			out = append(out, c)
		}
	}
	return out
}

// rotateServers returns cs with each run of cells that differ only in
// their server rotated by round places, so that no kind of server always
// runs first in a cell (the implementations rotate the same way).
func rotateServers(cs []Cell, round int) []Cell {
	out := make([]Cell, 0, len(cs))
	for i := 0; i < len(cs); {
		j := i + 1
		for j < len(cs) && SameBut(cs[i], cs[j]) {
			j++
		}
		n := j - i
		for k := range n {
			out = append(out, cs[i+(k+round)%n])
		}
		i = j
	}
	return out
}

// SameBut reports whether a and b are the same cell on different servers.
func SameBut(a, b Cell) bool {
	b.Server = a.Server
	return a == b
}

// runsOn reports whether im runs in c: every lock on the first kind of
// server, and only the Redis locks (peers and floors too) on the others,
// since a lock on etcd, ZooKeeper or PostgreSQL does not use them.
func runsOn(im *registry.Lock, c Cell, cs []Cell) bool {
	return len(cs) == 0 || c.Server == cs[0].Server || registry.SystemOf(im) == registry.SysRedis
}

// serverSuffix is the file-name suffix of a cell on server kind: none
// for redis or no -server, so the default run's files keep their names;
// "_valkey" for Valkey.
func serverSuffix(kind string) string {
	if kind == "" || kind == env.ServerRedis {
		return ""
	}
	return "_" + kind
}

// HeadlineCells returns one cell per scenario of cs, in their order: the
// one with the most clients, and among those, on one key the longest hold
// (a queue forms, so waiting is what differs) and over many keys the
// shortest (contention is low and the lock's own cost is what differs).
// A scenario with one cell (uncontended) is that cell.
func HeadlineCells(cs []Cell) []Cell {
	var out []Cell
	for _, c := range cs {
		i := slices.IndexFunc(out, func(h Cell) bool { return h.Scenario == c.Scenario })
		if i < 0 {
			out = append(out, c)
			continue
		}
		h := out[i]
		preferred := c.Hold > h.Hold // on one key: the longer hold
		if c.Keys > 1 {
			preferred = c.Hold < h.Hold // over many keys: the shorter
		}
		if c.Clients > h.Clients || c.Clients == h.Clients && preferred {
			out[i] = c
		}
	}
	return out
}
