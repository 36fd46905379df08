package htmlreport

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
)

// A job is what an engineer wants a lock for; the report gives one verdict
// for each.
type job struct {
	name     string
	scenario string // the scenario whose headline cell decides
	nodes    int    // servers the locks use
	others   bool   // locks beyond Redis (etcd, ZooKeeper, PostgreSQL)
}

var jobs = []job{
	{name: "One key under contention", scenario: "contended", nodes: 1},
	{name: "Many keys", scenario: "keys", nodes: 1},
	{name: "No contention", scenario: "uncontended", nodes: 1},
	{name: "Five servers", scenario: "contended", nodes: 5},
	{name: "Beyond Redis", scenario: "contended", nodes: 1, others: true},
}

// Verdict is the answer for one job, at its scenario's headline cell.
type Verdict struct {
	Job  string // "One key under contention"
	Cell string // "contended, 8 clients, hold 1ms"; "" when Missing is set
	// Missing says why there is no verdict ("no lock of this job ran").
	Missing string

	Pick     string  // the lock to pick: the best among ours and the peers (see betterFor)
	PickKind string  // KindOurs or KindPeer
	Figure   float64 // its ops/s (acquisitions, or pairs when uncontended)
	Unit     string  // "acq/s" or "pairs/s"
	WaitP99  float64 // its wait p99 in µs, on one key under contention; else 0

	// Rival is the best lock of the other side: the best peer when Pick is
	// ours, our best when Pick is a peer; "" if none ran. OursRatio is our
	// lock's ops/s over the peer's (Pick over Rival, or Rival over Pick),
	// the median of same-round ratios, as report.md's summary computes it:
	// with an even number of rounds the median of the inverse ratios is
	// not the inverse of the median, so one direction is kept.
	Rival     string
	OursRatio float64
	// Floor is the floor Pick is measured against (raw, raw-5), and
	// FloorRatio Pick's ops/s over it (summary.json's ops_floor_ratio);
	// FloorRatio is 0 when the floor did not run.
	Floor      string
	FloorRatio float64
	// AALo and AAHi are the A/A control's lowest and highest same-round
	// ratio (raw-again over raw) in the same cell, or the one-server cell
	// for locks on five servers; both 0 when the control did not run.
	AALo, AAHi float64
	// Tie reports whether OursRatio sits inside the A/A spread: as far
	// from 1 as two runs of the same code were, or nearer.
	Tie bool
}

// cellKey names one cell of the bench: a scenario at a number of clients
// and a hold, on a kind of Redis server ("" without -server).
type cellKey struct {
	scenario string
	clients  int
	holdUs   float64
	server   string
}

func (r row) key() cellKey { return cellKey{r.Scenario, r.Clients, r.HoldUs, r.Server} }

func (c cellKey) label(keys int) string {
	parts := []string{c.scenario}
	if keys > 1 {
		parts = append(parts, fmt.Sprintf("%d clients over %d keys", c.clients, keys))
	} else if c.clients > 1 {
		parts = append(parts, fmt.Sprintf("%d clients", c.clients))
	}
	if c.scenario != "uncontended" {
		parts = append(parts, "hold "+fmtHoldUs(c.holdUs))
	}
	s := strings.Join(parts, ", ")
	if c.server != "" {
		s += " on " + c.server
	}
	return s
}

// headline returns the cell of scenario that decides among rows (of one
// kind of server), as report.md's summary picks it: the most clients, then on one key the longest hold
// (a queue forms) and over many keys the shortest (the lock's own cost
// shows). It reports false when the scenario did not run.
func headline(rows []row, scenario string) (cellKey, int, bool) {
	var best cellKey
	keys, found := 0, false
	for _, r := range rows {
		if r.Scenario != scenario {
			continue
		}
		c := r.key()
		preferred := c.holdUs > best.holdUs
		if r.Keys > 1 {
			preferred = c.holdUs < best.holdUs
		}
		if !found || c.clients > best.clients || c.clients == best.clients && preferred {
			best, keys, found = c, r.Keys, true
		}
	}
	return best, keys, found
}

// Verdicts reads the results directory dir (summary.json, and locks.json
// as [Write] leaves it) and returns one verdict per job, in the order
// report.html shows them: one key under contention, many keys, no
// contention, five servers, beyond Redis.
func Verdicts(dir string) ([]Verdict, error) {
	res, err := load(dir)
	if err != nil {
		return nil, err
	}
	return verdicts(res.rows, res.lock), nil
}

// VerdictsOf returns the verdicts of summary, the bytes of a summary.json,
// for the locks given (as [Write] takes them), as [Verdicts] does for a
// results directory. The bench writes report.md, which opens with them,
// before its directory holds locks.json.
func VerdictsOf(summary []byte, locks []Lock) ([]Verdict, error) {
	var rows []row
	if err := json.Unmarshal(summary, &rows); err != nil {
		return nil, fmt.Errorf("htmlreport: summary.json: %w", err)
	}
	res := &results{locks: locks}
	return verdicts(rows, res.lock), nil
}

// verdicts computes one verdict per job from the rows of summary.json.
//
// With -server redis,valkey every cell ran on each kind of server; the
// verdicts are the first kind's (the locks on other systems ran on it
// alone), and each verdict's cell names it. They are the locks' on their
// own clients: the runs on AutoPipeliners (-client) are compared in the
// report's own section.
func verdicts(rows []row, lockOf func(string) Lock) []Verdict {
	if len(rows) > 0 {
		first := rows[0].Server
		rows = slices.DeleteFunc(slices.Clone(rows), func(r row) bool { return r.Server != first || r.Client != "" })
	}
	var out []Verdict
	for _, j := range jobs {
		out = append(out, verdictFor(j, rows, lockOf))
	}
	return out
}

func verdictFor(j job, rows []row, lockOf func(string) Lock) Verdict {
	v := Verdict{Job: j.name}
	c, keys, ok := headline(rows, j.scenario)
	if !ok && j.nodes > 1 { // five servers: their cost shows without contention too
		c, keys, ok = headline(rows, "uncontended")
	}
	if !ok {
		v.Missing = fmt.Sprintf("the %s scenario did not run", j.scenario)
		return v
	}
	v.Cell = c.label(keys)
	v.Unit = "acq/s"
	if c.scenario == "uncontended" {
		v.Unit = "pairs/s"
	}
	in := func(r row) bool { return r.key() == c }
	var cands []*row
	fastest := 0.0
	for i := range rows {
		r := &rows[i]
		l := lockOf(r.Impl)
		if !in(*r) || l.Nodes != j.nodes || (l.System != "redis") != j.others || r.Violations > 0 || l.Kind != KindOurs && l.Kind != KindPeer {
			continue
		}
		cands = append(cands, r)
		fastest = max(fastest, r.OpsPerSec)
	}
	better := betterFor(c.scenario == "contended", fastest)
	var pick, ours, peer *row
	for _, r := range cands {
		switch lockOf(r.Impl).Kind {
		case KindOurs:
			if ours == nil || better(r, ours) {
				ours = r
			}
		case KindPeer:
			if peer == nil || better(r, peer) {
				peer = r
			}
		}
	}
	switch {
	case ours == nil && peer == nil:
		v.Missing = "no lock of ours or of a peer ran for it"
		if j.others {
			v.Missing = "no lock on etcd, ZooKeeper or PostgreSQL ran"
		}
		return v
	case peer == nil || ours != nil && !better(peer, ours):
		pick, v.PickKind = ours, KindOurs
		if peer != nil {
			v.Rival = peer.Impl
			v.OursRatio = sameRoundRatio(*ours, *peer)
		}
	default:
		pick, v.PickKind = peer, KindPeer
		if ours != nil {
			v.Rival = ours.Impl
			v.OursRatio = sameRoundRatio(*ours, *peer)
		}
	}
	v.Pick, v.Figure = pick.Impl, pick.OpsPerSec
	if c.scenario == "contended" {
		v.WaitP99 = pick.WaitP99Us
	}
	if pick.OpsFloorRatio != nil {
		v.Floor, v.FloorRatio = pick.FloorTo, *pick.OpsFloorRatio
	}
	v.AALo, v.AAHi = aaSpread(rows, c)
	if v.Rival != "" && v.AAHi > 0 {
		v.Tie = math.Abs(v.OursRatio-1) <= max(math.Abs(v.AALo-1), math.Abs(v.AAHi-1))
	}
	return v
}

// nearFastest is how close to the cell's best throughput a lock must come
// for its wait p99 to decide, under contention.
const nearFastest = 0.9

// betterFor returns the order of locks in a cell: by throughput; under
// contention, a lock within nearFastest of the cell's fastest (fastest
// ops/s) beats any slower one, and among those the lower wait p99 wins. On
// one contended key every lock's throughput is bounded by the hold, so
// locks come out close; what sets them apart is how long their waiters
// wait (a lock as fast as another whose waiters wait 360 ms at p99 where
// the other's wait 50 ms is not the pick).
func betterFor(contended bool, fastest float64) func(a, b *row) bool {
	if !contended {
		return func(a, b *row) bool { return a.OpsPerSec > b.OpsPerSec }
	}
	near := func(r *row) bool { return r.OpsPerSec >= nearFastest*fastest }
	return func(a, b *row) bool {
		switch na, nb := near(a), near(b); {
		case na && nb:
			return a.WaitP99Us < b.WaitP99Us
		case na != nb:
			return na
		}
		return a.OpsPerSec > b.OpsPerSec
	}
}

// The A/A control: the floor run a second time in each round.
const (
	aaFloor = "raw"
	aaAgain = "raw-again"
)

// aaSpread returns the lowest and highest same-round ratio of the A/A
// control in cell c (raw-again over raw), or zeros if it did not run.
func aaSpread(rows []row, c cellKey) (lo, hi float64) {
	var floor, again *row
	for i := range rows {
		r := &rows[i]
		if r.key() != c {
			continue
		}
		switch r.Impl {
		case aaFloor:
			floor = r
		case aaAgain:
			again = r
		}
	}
	if floor == nil || again == nil {
		return 0, 0
	}
	rs := roundRatios(*again, *floor)
	if len(rs) == 0 {
		return 0, 0
	}
	return rs[0], rs[len(rs)-1]
}

// roundRatios returns a's ops/s over b's in each round both ran, sorted.
func roundRatios(a, b row) []float64 {
	var rs []float64
	for _, ra := range a.PerRound {
		for _, rb := range b.PerRound {
			if ra.Round == rb.Round && rb.OpsPerSec > 0 {
				rs = append(rs, ra.OpsPerSec/rb.OpsPerSec)
			}
		}
	}
	slices.Sort(rs)
	return rs
}

// sameRoundRatio is the median of roundRatios(a, b), as the bench's
// tables compute their ratios; without rounds in common it falls back to
// the ratio of the medians.
func sameRoundRatio(a, b row) float64 {
	rs := roundRatios(a, b)
	switch {
	case len(rs) == 0 && b.OpsPerSec > 0:
		return a.OpsPerSec / b.OpsPerSec
	case len(rs) == 0:
		return 0
	case len(rs)%2 == 1:
		return rs[len(rs)/2]
	default:
		return (rs[len(rs)/2-1] + rs[len(rs)/2]) / 2
	}
}

// Sentence is the verdict in one sentence of plain text.
func (v Verdict) Sentence() string {
	if v.Missing != "" {
		return fmt.Sprintf("%s: no verdict, %s.", v.Job, v.Missing)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s): pick %s", v.Job, v.Cell, v.Pick)
	if v.PickKind == KindPeer {
		b.WriteString(" (a peer's)")
	}
	fmt.Fprintf(&b, ", %s %s", fmtOps(v.Figure), v.Unit)
	if v.WaitP99 > 0 {
		fmt.Fprintf(&b, " with a wait p99 of %s", fmtUs(v.WaitP99))
	}
	switch {
	case v.Rival == "" && v.PickKind == KindOurs:
		b.WriteString("; no peer ran")
	case v.Rival == "":
		b.WriteString("; none of ours ran")
	case v.PickKind == KindOurs:
		fmt.Fprintf(&b, "; %.2f× the best peer, %s", v.OursRatio, v.Rival)
	default:
		fmt.Fprintf(&b, "; our best, %s, is %.2f× it", v.Rival, v.OursRatio)
	}
	if v.Tie {
		fmt.Fprintf(&b, ": a tie, inside this run's A/A spread (%.2f–%.2f×)", v.AALo, v.AAHi)
	}
	if v.Floor != "" {
		fmt.Fprintf(&b, "; %.2f× the floor, %s", v.FloorRatio, v.Floor)
	}
	b.WriteString(".")
	return b.String()
}

func fmtOps(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	if len(s) <= 3 {
		return s
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// fmtUs prints a duration given in µs with a fitting unit, as report.md
// does.
func fmtUs(us float64) string {
	switch {
	case us >= 1e6:
		return fmt.Sprintf("%.2f s", us/1e6)
	case us >= 1e3:
		return fmt.Sprintf("%.1f ms", us/1e3)
	default:
		return fmt.Sprintf("%.0f µs", us)
	}
}

// fmtHoldUs prints a hold as the bench names it: "0", "1ms", "500µs".
func fmtHoldUs(us float64) string {
	switch {
	case us == 0:
		return "0"
	case math.Mod(us, 1000) == 0:
		return fmt.Sprintf("%gms", us/1000)
	default:
		return fmt.Sprintf("%gµs", us)
	}
}
