package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/locklab/locklab/bench/registry"

	"github.com/locklab/locklab/internal/history"
)

// cellResult is one lock under one schedule over all its runs.
type cellResult struct {
	impl   *registry.Lock
	sch    *schedule
	notRun string // why the schedule did not run; "" if it did

	runs         int // judged runs
	inconclusive int // runs that could not be judged
	whyNot       string
	unsafe       int
	stuck        int
	overlaps     int
	lost         int
	stale        int
	refused      int
	fenced       bool // the lock gives fencing tokens
	declined     int  // runs in which the lock refused the servers (they evict): safe
	whyDeclined  string
	told         int
	toldBefore   int
	maxStall     time.Duration

	// The lowest-numbered run of each kind, with its timeline.
	first map[string]firstRun
	all   bool // keep every run's timeline (-fault-timelines all)
}

type firstRun struct {
	index    int // 0-based
	seed     uint64
	timeline string
}

// Timeline kinds kept per cell.
const (
	tlUnsafe  = "unsafe"
	tlStuck   = "stuck"
	tlExample = "example"
)

func (c *cellResult) add(r *faultRun) {
	if r.declined != "" {
		c.runs++
		c.declined++
		if c.whyDeclined == "" {
			c.whyDeclined = r.declined
		}
		return
	}
	if r.failed != "" {
		c.inconclusive++
		if c.whyNot == "" {
			c.whyNot = r.failed
		}
		return
	}
	c.runs++
	c.fenced = c.fenced || r.fenced()
	v := r.v
	if v.Unsafe {
		c.unsafe++
	}
	if v.Stuck {
		c.stuck++
	}
	if v.Overlap {
		c.overlaps++
	}
	c.lost += v.LostUpdates
	c.stale += v.StaleAccepted
	c.refused += v.Refused
	if v.Told {
		c.told++
	}
	if v.ToldBeforeOverlap {
		c.toldBefore++
	}
	c.maxStall = max(c.maxStall, v.MaxStall)
	keep := func(kind string) {
		if c.first == nil {
			c.first = map[string]firstRun{}
		}
		if f, ok := c.first[kind]; ok && f.index < r.ev.index {
			return
		}
		c.first[kind] = firstRun{index: r.ev.index, seed: r.ev.seed, timeline: r.timeline()}
	}
	keep(tlExample)
	if c.all {
		c.first[fmt.Sprintf("run%d", r.ev.index+1)] = firstRun{index: r.ev.index, seed: r.ev.seed, timeline: r.timeline()}
	}
	if v.Unsafe {
		keep(tlUnsafe)
	}
	if v.Stuck {
		keep(tlStuck)
	}
}

// timeline renders the run's history with what was found.
func (r *faultRun) timeline() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s under %d. %s (run %d, seed %d, lease %v)\n%s\n\n", r.im.Name, r.ev.sch.n, r.ev.sch.title,
		r.ev.index+1, r.ev.seed, r.ev.sch.ttl, r.ev.sch.what)
	b.WriteString(history.Render(r.hist.Events(), r.v.Findings))
	fmt.Fprintf(&b, "\nresource counter at the end: %d\n", r.final)
	switch {
	case r.v.Unsafe:
		b.WriteString("verdict: UNSAFE\n")
	case r.v.Stuck:
		b.WriteString("verdict: STUCK (safe, not live)\n")
	case r.v.Overlap:
		b.WriteString("verdict: safe: the critical sections overlapped, but the fenced store refused every out-of-order write\n")
	default:
		b.WriteString("verdict: safe\n")
	}
	return b.String()
}

// faultRow is one line of faults.json.
type faultRow struct {
	Impl                string  `json:"impl"`
	Kind                string  `json:"kind"` // ours, peer, naive
	Fault               string  `json:"fault"`
	FaultNumber         int     `json:"fault_number"`
	Title               string  `json:"title"`
	Runs                int     `json:"runs"`         // judged runs
	Inconclusive        int     `json:"inconclusive"` // runs that could not be judged
	InconclusiveWhy     string  `json:"inconclusive_why,omitempty"`
	UnsafeRuns          int     `json:"unsafe_runs"`
	StuckRuns           int     `json:"stuck_runs"`
	Violations          int     `json:"violations"` // runs with overlapping critical sections
	LostUpdates         int     `json:"lost_updates"`
	StaleWritesAccepted int     `json:"stale_writes_accepted"`
	WritesRefused       int     `json:"writes_refused"` // writes the fenced store refused
	RefusedToRun        int     `json:"refused_to_run"` // runs in which the lock refused the servers (they evict keys): counted safe
	RefusedToRunWhy     string  `json:"refused_to_run_why,omitempty"`
	ToldRuns            int     `json:"told_runs"`           // runs in which a holder's lock said it was lost
	ToldBeforeOverlap   *int    `json:"told_before_overlap"` // overlapping runs in which the holder was told before the overlap began; null: the lock has no loss signal
	MaxStallMs          float64 `json:"max_stall_ms"`
	Modeled             bool    `json:"modeled"`
	NotRun              string  `json:"not_run,omitempty"`
	Claim               string  `json:"claim"` // survives, named, unstated
	ClaimSource         string  `json:"claim_source,omitempty"`
	Timeline            string  `json:"timeline,omitempty"` // the first unsafe (else stuck) run's timeline
	TTLms               int64   `json:"ttl_ms"`
}

func (c *cellResult) row() faultRow {
	cl := registry.ClaimOf(c.impl.Name, c.sch.id)
	r := faultRow{Impl: c.impl.Name, Kind: string(c.impl.Kind), Fault: c.sch.id, FaultNumber: c.sch.n, Title: c.sch.title,
		Runs: c.runs, Inconclusive: c.inconclusive, InconclusiveWhy: c.whyNot,
		UnsafeRuns: c.unsafe, StuckRuns: c.stuck, Violations: c.overlaps, LostUpdates: c.lost,
		StaleWritesAccepted: c.stale, WritesRefused: c.refused, RefusedToRun: c.declined, RefusedToRunWhy: c.whyDeclined, ToldRuns: c.told, MaxStallMs: float64(c.maxStall.Microseconds()) / 1000,
		Modeled: c.sch.modeled, NotRun: c.notRun, Claim: cl.Verdict, ClaimSource: cl.Why, TTLms: c.sch.ttl.Milliseconds()}
	if c.impl.LossSignal {
		n := c.toldBefore
		r.ToldBeforeOverlap = &n
	}
	if kind := c.linked(); kind != "" {
		r.Timeline = c.timelinePath(kind)
	}
	return r
}

// linked returns the kind of run whose timeline a cell links to: its first
// unsafe run, else its first stuck run; "" for neither.
func (c *cellResult) linked() string {
	for _, k := range []string{tlUnsafe, tlStuck} {
		if _, ok := c.first[k]; ok {
			return k
		}
	}
	return ""
}

func (c *cellResult) timelinePath(kind string) string {
	f := c.first[kind]
	if strings.HasPrefix(kind, "run") {
		return fmt.Sprintf("timelines/%d-%s/all/%s_%s.txt", c.sch.n, c.sch.id, fileSafe(c.impl.Name), kind)
	}
	return fmt.Sprintf("timelines/%d-%s/%s_%s_run%d.txt", c.sch.n, c.sch.id, fileSafe(c.impl.Name), kind, f.index+1)
}

func fileSafe(s string) string {
	return strings.NewReplacer("+", "-plus-", "/", "-", "*", "x").Replace(s)
}

// text is the matrix cell: "0/20", "7/20 runs unsafe", "3/20 runs stuck".
func (c *cellResult) text() string {
	if c.notRun == notApplicable {
		return "–"
	}
	if c.notRun != "" {
		return "not run"
	}
	if c.runs == 0 {
		return fmt.Sprintf("inconclusive (%d)", c.inconclusive)
	}
	var s string
	switch {
	case c.unsafe > 0 && c.stuck > 0:
		s = fmt.Sprintf("%d/%d runs unsafe, %d stuck", c.unsafe, c.runs, c.stuck)
	case c.unsafe > 0:
		s = fmt.Sprintf("%d/%d runs unsafe", c.unsafe, c.runs)
	case c.stuck > 0:
		s = fmt.Sprintf("%d/%d runs stuck", c.stuck, c.runs)
	default:
		s = fmt.Sprintf("0/%d", c.runs)
	}
	if c.declined > 0 {
		s += fmt.Sprintf(" (%d refused to run)", c.declined)
	}
	if c.inconclusive > 0 {
		s += fmt.Sprintf(" (+%d inconclusive)", c.inconclusive)
	}
	return s
}
