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
	// Releases: Unlocks that returned; ReleasesFailed: those that returned
	// an error; FailedTookEffect: those of them that released the lock all
	// the same (judge.Verdict): a defect for the caller, not unsafe.
	Releases, ReleasesFailed, FailedTookEffect int

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
	// tlFalseFail: a run with a release reported failed that took effect.
	tlFalseFail = "release-failed"
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
	c.Releases += v.Releases
	c.ReleasesFailed += v.ReleasesFailed
	c.FailedTookEffect += v.FailedTookEffect
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
	if v.FailedTookEffect > 0 {
		keep(tlFalseFail)
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
	if n := r.v.FailedTookEffect; n > 0 {
		fmt.Fprintf(&b, "also: %d of %d releases reported failed that took effect (Unlock returned an error, yet the lock was released): a defect for the caller, not a safety violation\n", n, r.v.Releases)
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
	// Releases: Unlocks that returned; ReleasesFailed: those that returned
	// an error; ReleasesFailedTookEffect: those of them after which the
	// lock's servers no longer held the holder's token (a release
	// reported failed that took effect: a defect, not unsafe).
	Releases                 int    `json:"releases"`
	ReleasesFailed           int    `json:"releases_failed"`
	ReleasesFailedTookEffect int    `json:"releases_failed_took_effect"`
	Modeled                  bool   `json:"modeled"`
	NotRun                   string `json:"not_run,omitempty"`
	Claim                    string `json:"claim"` // survives, named, unstated
	ClaimSource              string `json:"claim_source,omitempty"`
	Timeline                 string `json:"timeline,omitempty"` // the first unsafe (else stuck, else release reported failed that took effect) run's timeline
	TTLms                    int64  `json:"ttl_ms"`
}

func (c *CellResult) Row() FaultRow {
	cl := registry.ClaimOf(c.Impl.Name, c.Sch.ID)
	r := FaultRow{Impl: c.Impl.Name, Kind: string(c.Impl.Kind), Fault: c.Sch.ID, FaultNumber: c.Sch.N, Title: c.Sch.Title,
		Runs: c.Runs, Inconclusive: c.Inconclusive, InconclusiveWhy: c.WhyNot,
		UnsafeRuns: c.Unsafe, StuckRuns: c.Stuck, Violations: c.Overlaps, LostUpdates: c.Lost,
		StaleWritesAccepted: c.Stale, WritesRefused: c.Refused, RefusedToRun: c.Declined, RefusedToRunWhy: c.WhyDeclined, ToldRuns: c.Told, MaxStallMs: float64(c.MaxStall.Microseconds()) / 1000,
		Releases: c.Releases, ReleasesFailed: c.ReleasesFailed, ReleasesFailedTookEffect: c.FailedTookEffect,
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
// unsafe run, else its first stuck run, else its first run with a release
// reported failed that took effect; "" for none.
func (c *CellResult) Linked() string {
	for _, k := range []string{tlUnsafe, tlStuck, tlFalseFail} {
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
// "3/20 runs stuck", "0/20; 42 of 310 releases reported failed that took
// effect" (htmlreport.CellText, its long form).
func (c *CellResult) Text() string {
	return htmlreport.CellText(htmlreport.CellCounts{NotRun: c.NotRun, Runs: c.Runs, Unsafe: c.Unsafe,
		Stuck: c.Stuck, Refused: c.Declined, Inconclusive: c.Inconclusive,
		Releases: c.Releases, FailedTookEffect: c.FailedTookEffect}, true)
}
