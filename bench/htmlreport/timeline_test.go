package htmlreport

import (
	"os"
	"strings"
	"testing"
)

func TestParseTimeline(t *testing.T) {
	b, err := os.ReadFile("testdata/results/timelines/1-pause/correct_unsafe_run1.txt")
	if err != nil {
		t.Fatal(err)
	}
	tl, err := parseTimeline(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(tl.lanes, ","), "client A,client B,client C,faults"; got != want {
		t.Errorf("lanes = %q; want %q", got, want)
	}
	if tl.verdict != "UNSAFE" {
		t.Errorf("verdict = %q; want UNSAFE", tl.verdict)
	}
	if len(tl.findings) == 0 {
		t.Errorf("findings = none; want the VIOLATION line")
	}
	// Every event is in the lane its text starts in: the pause in the
	// faults lane, B's acquisition in B's.
	lane := map[string]int{}
	for _, e := range tl.events {
		lane[e.text] = e.lane
	}
	for text, want := range map[string]int{"SIGSTOP A (frozen in its critical section)": 3, "acquired tok=b1": 1, "acquired tok=a1": 0} {
		if got, ok := lane[text]; !ok || got != want {
			t.Errorf("lane of %q = %d (found %v); want %d", text, got, ok, want)
		}
	}
	svg := tl.svg()
	for _, w := range []string{`class="hold"`, `class="wait"`, `class="overlap"`, "SIGSTOP A", "client C"} {
		if !strings.Contains(svg, w) {
			t.Errorf("svg lacks %q", w)
		}
	}
}

func TestParseTimelineBadInput(t *testing.T) {
	if _, err := parseTimeline("no lanes here\n"); err == nil {
		t.Errorf("parseTimeline(no header) = nil error; want one")
	}
	tl, err := parseTimeline("title\n\n  t(ms)  client A                  faults\n    ...  (7 events omitted)\n     12  acquired tok=a1\n")
	if err != nil {
		t.Fatal(err)
	}
	if tl.omitted != 7 || len(tl.events) != 1 {
		t.Errorf("omitted, events = %d, %d; want 7, 1", tl.omitted, len(tl.events))
	}
}
