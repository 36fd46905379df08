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
