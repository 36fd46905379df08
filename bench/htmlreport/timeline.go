package htmlreport

import (
	"fmt"
	"html"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A timeline file (bench/faults/cells.go, drawn by internal/history's
// Render) reads:
//
//	<title lines>
//	  t(ms)  client A                  client B                  faults
//	      0  wants the lock
//	     12  acquired tok=a1
//	    250                                                      paused A
//	    ...  (12 events omitted)
//	  VIOLATION: <sentence>
//
//	resource counter at the end: 1
//	verdict: UNSAFE
//
// Each event's lane is the column its text starts in: a lane is as wide
// as its name plus two, and at least laneWidth.

// laneWidth is internal/history's width of a lane.
const laneWidth = 26

// timeline is one run's history, read back from its file.
type timeline struct {
	title    []string // the lines before the lanes
	lanes    []string // "client A", ..., "faults"
	events   []event
	omitted  int      // events the file left out
	findings []string // VIOLATION sentences
	tail     []string // the lines after: the counter, the verdict
	verdict  string   // "UNSAFE", "STUCK (safe, not live)", "safe", ...
}

type event struct {
	ms   int
	lane int
	text string
}

var (
	splitLanes  = regexp.MustCompile(`\s{2,}`)
	overlapSpan = regexp.MustCompile(`(\d+(?:\.\d+)?)-(\d+(?:\.\d+)?) ms`)
)

// parseTimeline reads a timeline file; it reports an error when the file
// has no lanes header.
func parseTimeline(s string) (*timeline, error) {
	t := &timeline{}
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	h := -1
	for i, ln := range lines {
		if strings.HasPrefix(strings.TrimLeft(ln, " "), "t(ms)") {
			h = i
			break
		}
	}
	if h < 0 {
		return nil, fmt.Errorf("htmlreport: a timeline without a lanes header (t(ms) ...)")
	}
	t.title = trimBlank(lines[:h])
	head := strings.TrimSpace(strings.TrimPrefix(strings.TrimLeft(lines[h], " "), "t(ms)"))
	t.lanes = splitLanes.Split(head, -1)
	starts := make([]int, len(t.lanes))
	for i := 1; i < len(t.lanes); i++ {
		starts[i] = starts[i-1] + max(laneWidth, utf8.RuneCountInString(t.lanes[i-1])+2)
	}
	i := h + 1
	for ; i < len(lines); i++ {
		ln := lines[i]
		if strings.HasPrefix(ln, "  VIOLATION: ") {
			t.findings = append(t.findings, strings.TrimPrefix(ln, "  VIOLATION: "))
			continue
		}
		if len(ln) < 9 || ln[7:9] != "  " {
			break
		}
		at := strings.TrimSpace(ln[:7])
		rest := ln[9:]
		if at == "..." {
			n, _ := strconv.Atoi(strings.Fields(strings.TrimPrefix(strings.TrimSpace(rest), "("))[0])
			t.omitted += n
			continue
		}
		ms, err := strconv.Atoi(at)
		if err != nil {
			break
		}
		indent := len(rest) - len(strings.TrimLeft(rest, " "))
		lane := 0
		for k, st := range starts {
			if indent >= st {
				lane = k
			}
		}
		t.events = append(t.events, event{ms: ms, lane: lane, text: strings.TrimSpace(rest)})
	}
	t.tail = trimBlank(lines[i:])
	for _, ln := range t.tail {
		if v, ok := strings.CutPrefix(ln, "verdict: "); ok {
			t.verdict = v
		}
	}
	return t, nil
}

func trimBlank(ls []string) []string {
	var out []string
	for _, l := range ls {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// eventClass sorts an event's text for its colour.
func eventClass(text string) string {
	switch {
	case strings.HasPrefix(text, "acquired"):
		return "acq"
	case strings.HasPrefix(text, "released"):
		return "rel"
	case strings.HasPrefix(text, "not acquired"), strings.HasPrefix(text, "unlock failed"):
		return "fail"
	case strings.HasPrefix(text, "wants"):
		return "want"
	case strings.Contains(text, "VIOLATION"), strings.Contains(text, "stale"), strings.Contains(text, "lost"):
		return "bad"
	}
	return "other"
}

// svg draws the timeline as swim lanes: one row per lane, time to the
// right. A client's hold (acquired to released, unlock failed, or the end)
// is a bar, its wait (wants to acquired) a thin line; every event is a
// tick whose tooltip is its text, and faults are labelled in their lane.
func (t *timeline) svg() string {
	const (
		left, right, top = 90.0, 20.0, 24.0
		laneH, width     = 34.0, 1240.0
	)
	if len(t.events) == 0 {
		return `<p class="muted">No events.</p>`
	}
	t0, t1 := t.events[0].ms, t.events[0].ms
	for _, e := range t.events {
		t0, t1 = min(t0, e.ms), max(t1, e.ms)
	}
	if t1 == t0 {
		t1 = t0 + 1
	}
	span := float64(t1 - t0)
	x := func(ms int) float64 { return left + (width-left-right)*float64(ms-t0)/span }
	height := top + laneH*float64(len(t.lanes)) + 24
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="lanes" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" role="img" xmlns="http://www.w3.org/2000/svg">`, width, height, width, height)
	for i, name := range t.lanes {
		y := top + laneH*float64(i)
		fill := "#f6f8fa"
		if i%2 == 1 {
			fill = "#ffffff"
		}
		fmt.Fprintf(&b, `<rect x="0" y="%.1f" width="%.0f" height="%.0f" fill="%s"/>`, y, width, laneH, fill)
		fmt.Fprintf(&b, `<text x="6" y="%.1f" class="lane">%s</text>`, y+laneH/2+4, html.EscapeString(name))
	}
	// Time axis: about six ticks.
	step := niceStep(span / 6)
	for ms := (t0/step + 1) * step; ms <= t1; ms += step {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.0f" y2="%.0f" class="grid"/>`, x(ms), x(ms), top, height-24)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" class="axis">%d ms</text>`, x(ms), height-8, ms)
	}
	// The overlap each finding names ("... in the critical section
	// 1222-1229 ms"), as a red band across the lanes.
	for _, f := range t.findings {
		m := overlapSpan.FindStringSubmatch(f)
		if m == nil {
			continue
		}
		a, _ := strconv.ParseFloat(m[1], 64)
		z, _ := strconv.ParseFloat(m[2], 64)
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.0f" width="%.1f" height="%.0f" class="overlap"><title>%s</title></rect>`,
			x(int(a)), top, max(x(int(z))-x(int(a)), 3), laneH*float64(len(t.lanes)), html.EscapeString(f))
	}
	// Holds and waits per client lane.
	faultLane := len(t.lanes) - 1
	type open struct {
		at   int
		ok   bool
		text string
	}
	holding := map[int]open{}
	waiting := map[int]open{}
	bar := func(lane, from, to int, cls, title string) {
		y := top + laneH*float64(lane)
		w := max(x(to)-x(from), 2)
		if cls == "wait" {
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="4" class="wait"><title>%s</title></rect>`, x(from), y+laneH/2-2, w, html.EscapeString(title))
			return
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.0f" rx="3" class="hold"><title>%s</title></rect>`, x(from), y+7, w, laneH-14, html.EscapeString(title))
	}
	for _, e := range t.events {
		if e.lane == faultLane {
			continue
		}
		switch eventClass(e.text) {
		case "want":
			waiting[e.lane] = open{at: e.ms, ok: true}
		case "acq":
			if w, ok := waiting[e.lane]; ok {
				bar(e.lane, w.at, e.ms, "wait", fmt.Sprintf("waited %d ms", e.ms-w.at))
				delete(waiting, e.lane)
			}
			holding[e.lane] = open{at: e.ms, ok: true, text: e.text}
		case "rel", "fail":
			if h, ok := holding[e.lane]; ok {
				bar(e.lane, h.at, e.ms, "hold", fmt.Sprintf("%s at %d ms, held %d ms, then %s", h.text, h.at, e.ms-h.at, e.text))
				delete(holding, e.lane)
			}
			delete(waiting, e.lane)
		}
	}
	for lane, h := range holding {
		bar(lane, h.at, t1, "hold", fmt.Sprintf("%s at %d ms, still held at the end", h.text, h.at))
	}
	for lane, w := range waiting {
		bar(lane, w.at, t1, "wait", "still waiting at the end")
	}
	lastLabel := -1e9
	for _, e := range t.events {
		y := top + laneH*float64(e.lane)
		cls := eventClass(e.text)
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" class="ev %s"><title>%d ms: %s</title></line>`,
			x(e.ms), x(e.ms), y+3, y+laneH-3, cls, e.ms, html.EscapeString(e.text))
		if e.lane == faultLane && x(e.ms) > lastLabel+8 {
			label := e.text
			if utf8.RuneCountInString(label) > 28 {
				label = string([]rune(label)[:27]) + "…"
			}
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" class="flabel">%s<title>%d ms: %s</title></text>`, x(e.ms)+3, y+laneH/2+4, html.EscapeString(label), e.ms, html.EscapeString(e.text))
			lastLabel = x(e.ms) + 6*float64(utf8.RuneCountInString(label))
		}
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// niceStep rounds d up to 1, 2 or 5 times a power of ten (at least 1).
func niceStep(d float64) int {
	step := 1
	for float64(step) < d {
		switch s := strconv.Itoa(step); s[0] {
		case '1':
			step *= 2
		case '2':
			step = step / 2 * 5
		default:
			step *= 2
		}
	}
	return step
}
