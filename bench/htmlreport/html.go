package htmlreport

import (
	"bytes"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"image/png"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

//go:embed report.html.tmpl
var pageSource string

//go:embed report.css
var pageCSS string

var page = template.Must(template.New("report").Parse(pageSource))

// Write writes dir/locks.json (the locks given, by name) and dir/report.html, made
// from the results directory dir, and returns the page's path. It needs
// summary.json or faults.json in dir; the plots, the heatmap and the
// timelines appear when they are there.
func Write(dir string, locks []Lock) (string, error) {
	locks = slices.Clone(locks)
	slices.SortFunc(locks, func(a, b Lock) int { return strings.Compare(a.Name, b.Name) })
	b, err := json.MarshalIndent(locks, "", "  ")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, locksFile), append(b, '\n'), 0o644); err != nil {
		return "", err
	}
	return Render(dir)
}

// Render writes dir/report.html from the results directory dir, whose
// locks.json [Write] wrote, and returns the page's path.
func Render(dir string) (string, error) {
	res, err := load(dir)
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	if err := res.page(&out); err != nil {
		return "", err
	}
	p := filepath.Join(dir, "report.html")
	if err := os.WriteFile(p, out.Bytes(), 0o644); err != nil {
		return "", err
	}
	return p, nil
}

// view is what the template draws.
type view struct {
	Title     string
	Command   string
	CSS       template.CSS
	Verdicts  []verdictView
	Tables    []tableView
	Matrix    *matrixView
	Heatmap   template.URL
	Plots     []plotGroup
	Timelines []timelineView
}

type verdictView struct {
	Job, Cell, Rest string
	Pick            string
	Missing         string
	Tie             bool
}

type tableView struct {
	Title string
	Head  []string
	Rows  []tableRowView
	All   *tableView
}

type tableRowView struct {
	Kind  string // the lock's kind, for its colour
	Cells []string
}

type matrixView struct {
	Faults []string
	Rows   []matrixRow
}

type matrixRow struct {
	Lock, Kind string
	Cells      []matrixCell
}

type matrixCell struct {
	Text, Class, Anchor, Title string
}

type plotGroup struct {
	Title  string
	Images []plotImage
}

type plotImage struct {
	Name string
	Src  template.URL
	Wide bool // wider than 900 pixels: a row of its own, not half of one
}

type timelineView struct {
	ID, Summary, Class string
	Title              []string
	SVG                template.HTML
	Lanes              []string
	Events             []eventRow
	Omitted            int
	Findings, Tail     []string
}

type eventRow struct {
	Ms    int
	Cells []string // one per lane: the text in its lane, "" elsewhere
	Class string
}

func (res *results) page(w *bytes.Buffer) error {
	v := view{Title: "locklab bench", CSS: template.CSS(pageCSS)}
	var mach struct {
		Start   string `json:"start"`
		Command string `json:"command"`
	}
	if err := readJSON(filepath.Join(res.dir, "machine.json"), &mach); err == nil {
		start := mach.Start
		if t, err := time.Parse(time.RFC3339Nano, start); err == nil {
			start = t.UTC().Format("2006-01-02 15:04 UTC")
		}
		v.Title += ", " + start
		v.Command = mach.Command
	}
	if len(res.rows) > 0 {
		for _, vd := range verdicts(res.rows, res.lock) {
			v.Verdicts = append(v.Verdicts, viewVerdict(vd))
		}
		v.Tables = res.tables()
	}
	timelines := map[string]string{} // path -> anchor
	if len(res.faults) > 0 {
		// A run that is a cell's first and its first unsafe one is in
		// two files; the page shows it once.
		seen := map[string]string{} // text -> anchor
		for _, p := range slices.Sorted(maps.Keys(res.timeline)) {
			if id, ok := seen[res.timeline[p]]; ok {
				timelines[p] = id
				continue
			}
			tv, err := res.viewTimeline(p, fmt.Sprintf("tl-%d", len(v.Timelines)+1))
			if err != nil {
				return fmt.Errorf("htmlreport: %s: %w", p, err)
			}
			timelines[p], seen[res.timeline[p]] = tv.ID, tv.ID
			v.Timelines = append(v.Timelines, tv)
		}
		v.Matrix = res.matrix(timelines)
	}
	if res.heatmap != "" {
		src, err := res.dataURI(res.heatmap)
		if err != nil {
			return err
		}
		v.Heatmap = src
	}
	known := func(p plot) bool { return sectionRank(p.section) < len(plotSections) }
	for _, sec := range append(slices.Clone(plotSections), struct{ key, title string }{"", "Other plots"}) {
		g := plotGroup{Title: sec.title}
		for _, p := range res.plots {
			if sec.key != "" && p.section != sec.key || sec.key == "" && known(p) {
				continue
			}
			src, err := res.dataURI(p.path)
			if err != nil {
				return err
			}
			// A picture that does not decode is still shown: Check names it.
			cfg, _ := png.DecodeConfig(bytes.NewReader(res.raw[p.path]))
			g.Images = append(g.Images, plotImage{Name: strings.TrimSuffix(path.Base(p.path), ".png"), Src: src,
				Wide: cfg.Width > 900})
		}
		if len(g.Images) > 0 {
			v.Plots = append(v.Plots, g)
		}
	}
	return page.Execute(w, v)
}

func viewVerdict(vd Verdict) verdictView {
	if vd.Missing != "" {
		return verdictView{Job: vd.Job, Missing: vd.Missing}
	}
	s := vd.Sentence()
	// The sentence reads "<job> (<cell>): pick <lock><rest>"; the page sets
	// the job and the lock apart.
	_, rest, _ := strings.Cut(s, ": pick "+vd.Pick)
	return verdictView{Job: vd.Job, Cell: vd.Cell, Pick: vd.Pick, Rest: rest, Tie: vd.Tie}
}

// dataURI returns the file rel of the results as a data: URI, and keeps
// its bytes in res.raw.
func (res *results) dataURI(rel string) (template.URL, error) {
	b, err := os.ReadFile(filepath.Join(res.dir, rel))
	if err != nil {
		return "", err
	}
	if res.raw == nil {
		res.raw = map[string][]byte{}
	}
	res.raw[rel] = b
	mime := "image/png"
	if strings.HasSuffix(rel, ".svg") {
		mime = "image/svg+xml"
	}
	return template.URL("data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(b)), nil
}

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
	var out []tableView
	for _, sc := range scs {
		c, keys, _ := headline(res.rows, sc)
		t := tableView{Title: c.label(keys)}
		all := &tableView{Title: "every lock, every cell of " + sc}
		contended := false
		type side struct {
			nodes  int
			others bool // beyond Redis
		}
		peer := map[side]*row{} // the best peer of each side
		for i := range res.rows {
			r := &res.rows[i]
			if r.Scenario == sc && r.FIFOFloorUs > 0 {
				contended = true
			}
			l := res.lock(r.Impl)
			if k := (side{l.Nodes, l.System != "redis"}); (cellKey{r.Scenario, r.Clients, r.HoldUs}) == c && l.Kind == KindPeer {
				if p := peer[k]; p == nil || r.OpsPerSec > p.OpsPerSec {
					peer[k] = r
				}
			}
		}
		t.Head, all.Head = tableHead(contended, false), tableHead(contended, true)
		for _, r := range res.rows {
			if r.Scenario != sc {
				continue
			}
			l := res.lock(r.Impl)
			all.Rows = append(all.Rows, tableRowView{l.Kind, tableRow(r, l.Kind, contended, true)})
			if (cellKey{r.Scenario, r.Clients, r.HoldUs}) != c {
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
			c := matrixCell{Text: cellText(fr), Class: cellClass(fr), Title: fr.Title}
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

// cellText is the matrix cell as faults.md prints it: "0/20",
// "7/20 unsafe", "3/20 stuck".
func cellText(f faultRow) string {
	switch {
	case f.NotRun == "not applicable":
		return "–"
	case f.NotRun != "":
		return "not run"
	case f.Runs == 0:
		return fmt.Sprintf("inconclusive (%d)", f.Inconclusive)
	}
	var s string
	switch {
	case f.UnsafeRuns > 0 && f.StuckRuns > 0:
		s = fmt.Sprintf("%d/%d unsafe, %d stuck", f.UnsafeRuns, f.Runs, f.StuckRuns)
	case f.UnsafeRuns > 0:
		s = fmt.Sprintf("%d/%d unsafe", f.UnsafeRuns, f.Runs)
	case f.StuckRuns > 0:
		s = fmt.Sprintf("%d/%d stuck", f.StuckRuns, f.Runs)
	default:
		s = fmt.Sprintf("0/%d", f.Runs)
	}
	if f.RefusedToRun > 0 {
		s += fmt.Sprintf(" (%d refused)", f.RefusedToRun)
	}
	if f.Inconclusive > 0 {
		s += fmt.Sprintf(" (+%d inconclusive)", f.Inconclusive)
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

// fileSafe is the bench's name of a lock in a file name (faults_report.go).
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
