package main

import (
	"fmt"
	"github.com/locklab/locklab/bench/registry"
	"slices"
	"strings"
	"time"
)

// Scenario names as they appear in rows: the rtt scenario yields two.
const (
	rowRTTUncontended = "rtt-uncontended"
	rowRTTContended   = "rtt-contended"
)

// cell is one (scenario, clients, hold) configuration; every implementation
// runs it once per round.
type cell struct {
	scenario string        // row scenario name (uncontended, contended, keys, rtt-*)
	clients  int           // contending clients
	hold     time.Duration // time each holder keeps the lock
	keys     int           // keys in play; 0 means a fresh key per pair
	rtt      time.Duration // latency added each way; 0 for direct connections
	server   string        // kind of Redis server (-server); "" with one kind and no -server
	autopipe bool          // the locks' runs on AutoPipeliners run here too (autopipeCell)
}

func (c cell) String() string {
	s := fmt.Sprintf("%s c=%d hold=%s", c.scenario, c.clients, fmtHold(c.hold))
	if c.scenario == scKeys {
		s += fmt.Sprintf(" keys=%d", c.keys)
	}
	if c.rtt > 0 {
		s += fmt.Sprintf(" rtt=%s", c.rtt)
	}
	if c.server != "" {
		s += " on " + c.server
	}
	return s
}

// id is the cell's file-name stem, e.g. "contended_c32_h1ms".
func (c cell) id() string {
	return fmt.Sprintf("%s_c%d_h%s", c.scenario, c.clients, fmtHold(c.hold)) + serverSuffix(c.server)
}

// fmtHold prints a hold as in the flag ("0", "1ms", "500µs" as "500us").
func fmtHold(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	return strings.ReplaceAll(d.String(), "µ", "u")
}

// holdsOverlap reports whether clients in c can hold the lock at the same
// time: only over many keys. On one key (or a fresh key per pair, with one
// client) a working lock has one holder at a time. holdFor sleeps
// differently in the two cases (see hold_linux.go).
func (c cell) holdsOverlap() bool { return c.keys > 1 }

// cells expands the configuration into the cells to run, in a fixed order.
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
func cells(c *config) []cell {
	var out []cell
	maxN := rttClients(c.clients)
	for _, sc := range c.scenarios {
		switch sc {
		case scUncontended:
			out = append(out, cell{scenario: scUncontended, clients: 1})
		case scContended:
			for _, n := range c.clients {
				for _, h := range c.holds {
					out = append(out, cell{scenario: scContended, clients: n, hold: h, keys: 1})
				}
			}
		case scKeys:
			for _, n := range c.keysCl {
				for _, h := range c.holds {
					out = append(out, cell{scenario: scKeys, clients: n, hold: h, keys: c.keys})
				}
			}
		case scRTT:
			out = append(out, cell{scenario: rowRTTUncontended, clients: 1, rtt: c.rtt})
			if maxN >= 2 {
				for _, h := range c.holds {
					out = append(out, cell{scenario: rowRTTContended, clients: maxN, hold: h, keys: 1, rtt: c.rtt})
				}
			}
		}
	}
	head := headlineCells(out)
	for i := range out {
		out[i].autopipe = autopipeCell(out[i], head, c.client)
	}
	if c.headline {
		out = headlineCells(out)
	}
	return withServers(out, c.servers)
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

// step is one run: one implementation in one cell in one round.
type step struct {
	round int
	cell  cell
	impl  *registry.Lock
}

// steps orders the runs: rounds outermost, then cells; within a cell the
// implementations run back to back (so same-round ratios compare runs made
// moments apart), in an order rotated by one place each round so that no
// implementation always runs first or last. With -server redis,valkey a
// cell's runs on each kind of server come one kind after the other, the
// kinds' order rotated the same way, and the locks on other systems run on
// the first kind only (runsOn).
func steps(rounds int, cs []cell, impls []*registry.Lock) []step {
	var out []step
	for r := range rounds {
		for _, c := range rotateServers(cs, r) {
			for i := range impls {
				im := impls[(i+r)%len(impls)]
				if im.Scenarios != nil && !slices.Contains(im.Scenarios, c.scenario) || !runsOn(im, c, cs) || im.Pipelined && !c.autopipe {
					continue
				}
				out = append(out, step{round: r, cell: c, impl: im})
			}
		}
	}
	return out
}

// perRunOverhead estimates the setup and teardown of one run (clients,
// warm-up, INFO snapshots, cleanup), for the plan printed at start.
const perRunOverhead = 60 * time.Millisecond

// estimate returns the planned wall time of the steps.
func estimate(ss []step, d time.Duration) time.Duration {
	return time.Duration(len(ss)) * (d + perRunOverhead)
}

// dropLoneControl leaves raw-again out of a run of one round (the -quick
// preset) unless -impls names it: one round gives one ratio, not a spread.
func dropLoneControl(impls []*registry.Lock, cfg *config) []*registry.Lock {
	if cfg.rounds > 1 || len(cfg.impls) > 0 {
		return impls
	}
	return slices.DeleteFunc(impls, func(im *registry.Lock) bool { return im.Name == "raw-again" })
}
