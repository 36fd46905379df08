package htmlreport

import (
	"fmt"
	"html/template"
	"path"
	"slices"
	"sort"
	"strings"
)

// matrix lays faults.json out as locks down, faults across.
func (res *results) matrix(timelines map[string]string) *matrixView {
	m := &matrixView{}
	type fault struct {
		n     int
		id, t string
	}
	var faults []fault
	var locks []string
	for _, f := range res.faults {
		if !slices.ContainsFunc(faults, func(x fault) bool { return x.id == f.Fault }) {
			t := fmt.Sprintf("%d. %s", f.FaultNumber, f.Title)
			if f.Modeled {
				t += " (modeled)"
			}
			faults = append(faults, fault{f.FaultNumber, f.Fault, t})
		}
		if !slices.Contains(locks, f.Impl) {
			locks = append(locks, f.Impl)
		}
	}
	sort.SliceStable(faults, func(i, j int) bool { return faults[i].n < faults[j].n })
	for _, f := range faults {
		m.Faults = append(m.Faults, f.t)
	}
	for _, l := range locks {
		mr := matrixRow{Lock: l, Kind: res.lock(l).Kind}
		for _, f := range faults {
			i := slices.IndexFunc(res.faults, func(r faultRow) bool { return r.Impl == l && r.Fault == f.id })
			if i < 0 {
				mr.Cells = append(mr.Cells, matrixCell{Text: "–", Class: "na"})
				continue
			}
			fr := res.faults[i]
			c := matrixCell{Text: CellText(CellCounts{NotRun: fr.NotRun, Runs: fr.Runs, Unsafe: fr.UnsafeRuns, Stuck: fr.StuckRuns, Refused: fr.RefusedToRun,
				Inconclusive: fr.Inconclusive, Releases: fr.Releases, FailedTookEffect: fr.ReleasesFailedTookEffect}, false), Class: cellClass(fr), Title: fr.Title}
			if fr.Claim != "" {
				c.Title += "; claim: " + fr.Claim
			}
			if p := res.cellTimeline(fr); p != "" {
				c.Anchor = timelines[p]
			}
			mr.Cells = append(mr.Cells, c)
		}
		m.Rows = append(m.Rows, mr)
	}
	return m
}

// NotApplicable is a faults.json row's not_run when its schedule does not
// apply to the lock's system (a Redis failover for a lock on etcd); the
// bench writes it, the matrix draws such a cell as –.
const NotApplicable = "does not apply to this lock's system"

// CellCounts are the figures of one cell of the fault matrix (one lock
// under one schedule), as a faults.json row gives them.
type CellCounts struct {
	NotRun                                     string // why the cell was not run; NotApplicable draws –
	Runs, Unsafe, Stuck, Refused, Inconclusive int
	// Releases: the Unlocks of the judged runs; FailedTookEffect: those
	// that returned an error although the lock was released (a defect
	// for the caller, not a safety violation).
	Releases, FailedTookEffect int
}

// CellText is the text of a fault matrix cell, the one wording of faults.md
// and report.html: "0/20", "7/20 unsafe", "3/20 stuck", "2/18 unsafe,
// 1 stuck (+2 inconclusive)", "–" where the schedule does not apply,
// "not run", "inconclusive (n)" when no run could be judged. long is
// faults.md's form, which says "runs unsafe" and "(n refused to run)";
// report.html's matrix cells say "unsafe" and "(n refused)". Releases
// reported failed that took effect follow, apart from the safety figure:
// "0/20; 42 of 310 releases reported failed that took effect" (long),
// "0/20; 42/310 failed releases took effect" (short).
func CellText(c CellCounts, long bool) string {
	switch {
	case c.NotRun == NotApplicable:
		return "–"
	case c.NotRun != "":
		return "not run"
	case c.Runs == 0:
		return fmt.Sprintf("inconclusive (%d)", c.Inconclusive)
	}
	runs, refused := "", "refused"
	if long {
		runs, refused = "runs ", "refused to run"
	}
	var s string
	switch {
	case c.Unsafe > 0 && c.Stuck > 0:
		s = fmt.Sprintf("%d/%d %sunsafe, %d stuck", c.Unsafe, c.Runs, runs, c.Stuck)
	case c.Unsafe > 0:
		s = fmt.Sprintf("%d/%d %sunsafe", c.Unsafe, c.Runs, runs)
	case c.Stuck > 0:
		s = fmt.Sprintf("%d/%d %sstuck", c.Stuck, c.Runs, runs)
	default:
		s = fmt.Sprintf("0/%d", c.Runs)
	}
	if c.Refused > 0 {
		s += fmt.Sprintf(" (%d %s)", c.Refused, refused)
	}
	if c.Inconclusive > 0 {
		s += fmt.Sprintf(" (+%d inconclusive)", c.Inconclusive)
	}
	if c.FailedTookEffect > 0 {
		if long {
			s += fmt.Sprintf("; %d of %d releases reported failed that took effect", c.FailedTookEffect, c.Releases)
		} else {
			s += fmt.Sprintf("; %d/%d failed releases took effect", c.FailedTookEffect, c.Releases)
		}
	}
	return s
}

func cellClass(f faultRow) string {
	switch {
	case f.NotRun != "" || f.Runs == 0:
		return "na"
	case f.UnsafeRuns > 0:
		return "unsafe"
	case f.StuckRuns > 0:
		return "stuck"
	}
	return "safe"
}

// cellTimeline returns the timeline a matrix cell opens: its first unsafe
// (else stuck) run's, as faults.json names it, else its first run's.
func (res *results) cellTimeline(f faultRow) string {
	if _, ok := res.timeline[f.Timeline]; ok {
		return f.Timeline
	}
	prefix := fmt.Sprintf("timelines/%d-%s/%s_", f.FaultNumber, f.Fault, fileSafe(f.Impl))
	var best string
	for p := range res.timeline {
		if strings.HasPrefix(p, prefix) && (best == "" || p < best) {
			best = p
		}
	}
	return best
}

// fileSafe is the bench's name of a lock in a file name (bench/faults/cells.go).
func fileSafe(s string) string {
	return strings.NewReplacer("+", "-plus-", "/", "-", "*", "x").Replace(s)
}

func (res *results) viewTimeline(p, id string) (timelineView, error) {
	t, err := parseTimeline(res.timeline[p])
	if err != nil {
		return timelineView{}, err
	}
	tv := timelineView{ID: id, Title: t.title, SVG: template.HTML(t.svg()), Lanes: t.lanes,
		Omitted: t.omitted, Findings: t.findings, Tail: t.tail, Class: "safe"}
	tv.Summary = strings.TrimSuffix(path.Base(p), ".txt")
	if len(t.title) > 0 {
		tv.Summary, tv.Title = t.title[0], t.title[1:]
	}
	switch {
	case strings.HasPrefix(t.verdict, "UNSAFE"):
		tv.Class = "unsafe"
	case strings.HasPrefix(t.verdict, "STUCK"):
		tv.Class = "stuck"
	}
	if t.verdict != "" {
		tv.Summary += " — " + t.verdict
	}
	for _, e := range t.events {
		er := eventRow{Ms: e.ms, Cells: make([]string, len(t.lanes)), Class: eventClass(e.text)}
		er.Cells[e.lane] = e.text
		tv.Events = append(tv.Events, er)
	}
	return tv, nil
}
