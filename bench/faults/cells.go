package faults

import (
	"fmt"
	"strings"
	"time"

	"github.com/locklab/locklab/bench/htmlreport"
	"github.com/locklab/locklab/bench/registry"

	"github.com/locklab/locklab/internal/history"
)

// CellResult is one lock under one schedule over all its runs.
type CellResult struct {
	Impl   *registry.Lock
	Sch    *Schedule
	NotRun string // why the schedule did not run; "" if it did

	Runs         int // judged runs
	Inconclusive int // runs that could not be judged
	WhyNot       string
	Unsafe       int
	Stuck        int
	Overlaps     int
	Lost         int
	Stale        int
	Refused      int
	Fenced       bool // the lock gives fencing tokens
	Declined     int  // runs in which the lock refused the servers (they evict): safe
	WhyDeclined  string
	Told         int
	ToldBefore   int
	MaxStall     time.Duration

	// The lowest-numbered run of each kind, with its timeline.
	First map[string]firstRun
	all   bool // keep every run's timeline (-fault-timelines all)
}

type firstRun struct {
	index    int // 0-based
	seed     uint64
	Timeline string
}

// Timeline kinds kept per cell.
const (
	tlUnsafe  = "unsafe"
	tlStuck   = "stuck"
	tlExample = "example"
)

func (c *CellResult) add(r *FaultRun) {
	if r.declined != "" {
		c.Runs++
		c.Declined++
		if c.WhyDeclined == "" {
			c.WhyDeclined = r.declined
		}
		return
	}
	if r.failed != "" {
		c.Inconclusive++
		if c.WhyNot == "" {
			c.WhyNot = r.failed
		}
		return
	}
	c.Runs++
	c.Fenced = c.Fenced || r.fenced()
	v := r.v
	if v.Unsafe {
		c.Unsafe++
	}
	if v.Stuck {
		c.Stuck++
	}
	if v.Overlap {
		c.Overlaps++
	}
	c.Lost += v.LostUpdates
	c.Stale += v.StaleAccepted
	c.Refused += v.Refused
	if v.Told {
		c.Told++
	}
	if v.ToldBeforeOverlap {
		c.ToldBefore++
	}
	c.MaxStall = max(c.MaxStall, v.MaxStall)
	keep := func(kind string) {
		if c.First == nil {
			c.First = map[string]firstRun{}
		}
		if f, ok := c.First[kind]; ok && f.index < r.Ev.index {
			return
		}
		c.First[kind] = firstRun{index: r.Ev.index, seed: r.Ev.seed, Timeline: r.timeline()}
	}
	keep(tlExample)
	if c.all {
		c.First[fmt.Sprintf("run%d", r.Ev.index+1)] = firstRun{index: r.Ev.index, seed: r.Ev.seed, Timeline: r.timeline()}
	}
	if v.Unsafe {
		keep(tlUnsafe)
	}
	if v.Stuck {
		keep(tlStuck)
	}
}

// timeline renders the run's history with what was found.
func (r *FaultRun) timeline() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s under %d. %s (run %d, seed %d, lease %v)\n%s\n\n", r.Im.Name, r.Ev.Sch.N, r.Ev.Sch.Title,
		r.Ev.index+1, r.Ev.seed, r.Ev.Sch.TTL, r.Ev.Sch.What)
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

// FaultRow is one line of faults.json.
type FaultRow struct {
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

func (c *CellResult) Row() FaultRow {
	cl := registry.ClaimOf(c.Impl.Name, c.Sch.ID)
	r := FaultRow{Impl: c.Impl.Name, Kind: string(c.Impl.Kind), Fault: c.Sch.ID, FaultNumber: c.Sch.N, Title: c.Sch.Title,
		Runs: c.Runs, Inconclusive: c.Inconclusive, InconclusiveWhy: c.WhyNot,
		UnsafeRuns: c.Unsafe, StuckRuns: c.Stuck, Violations: c.Overlaps, LostUpdates: c.Lost,
		StaleWritesAccepted: c.Stale, WritesRefused: c.Refused, RefusedToRun: c.Declined, RefusedToRunWhy: c.WhyDeclined, ToldRuns: c.Told, MaxStallMs: float64(c.MaxStall.Microseconds()) / 1000,
		Modeled: c.Sch.Modeled, NotRun: c.NotRun, Claim: cl.Verdict, ClaimSource: cl.Why, TTLms: c.Sch.TTL.Milliseconds()}
	if c.Impl.LossSignal {
		n := c.ToldBefore
		r.ToldBeforeOverlap = &n
	}
	if kind := c.Linked(); kind != "" {
		r.Timeline = c.TimelinePath(kind)
	}
	return r
}

// Linked returns the kind of run whose timeline a cell links to: its first
// unsafe run, else its first stuck run; "" for neither.
func (c *CellResult) Linked() string {
	for _, k := range []string{tlUnsafe, tlStuck} {
		if _, ok := c.First[k]; ok {
			return k
		}
	}
	return ""
}

func (c *CellResult) TimelinePath(kind string) string {
	f := c.First[kind]
	if strings.HasPrefix(kind, "run") {
		return fmt.Sprintf("timelines/%d-%s/all/%s_%s.txt", c.Sch.N, c.Sch.ID, fileSafe(c.Impl.Name), kind)
	}
	return fmt.Sprintf("timelines/%d-%s/%s_%s_run%d.txt", c.Sch.N, c.Sch.ID, fileSafe(c.Impl.Name), kind, f.index+1)
}

func fileSafe(s string) string {
	return strings.NewReplacer("+", "-plus-", "/", "-", "*", "x").Replace(s)
}

// Text is the cell as faults.md prints it: "0/20", "7/20 runs unsafe",
// "3/20 runs stuck" (htmlreport.CellText, its long form).
func (c *CellResult) Text() string {
	return htmlreport.CellText(htmlreport.CellCounts{NotRun: c.NotRun, Runs: c.Runs, Unsafe: c.Unsafe,
		Stuck: c.Stuck, Refused: c.Declined, Inconclusive: c.Inconclusive}, true)
}
