package htmlreport

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixture copies the fixed results directory (the real output of a short
// run: go run ./bench -quick -rounds 2 with the faults pause, lost-reply
// and latency, 3 runs; only some plots and timelines kept) into a
// temporary directory.
func fixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := "testdata/results"
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// needChromium skips the test without Chromium, or fails it in CI.
func needChromium(t *testing.T) {
	t.Helper()
	if _, err := findChromium(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v: CI must check report.html in it (.ci/deps installs it)", err)
		}
		t.Skipf("%v", err)
	}
}

func render(t *testing.T, dir string) string {
	t.Helper()
	var locks []Lock
	if err := readJSON(filepath.Join(dir, locksFile), &locks); err != nil {
		t.Fatal(err)
	}
	p, err := Write(dir, locks)
	if err != nil {
		t.Fatalf("Write(%s) = %v", dir, err)
	}
	return p
}

func TestReportContents(t *testing.T) {
	dir := fixture(t)
	// A plot of a kind the page has no section for.
	if err := os.Rename(filepath.Join(dir, "plots", "cmds_contended_h1ms.png"), filepath.Join(dir, "plots", "newkind_contended_h1ms.png")); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(render(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{
		`<section id="verdicts">`, "One key under contention", "Many keys", "No contention", "Five servers", "Beyond Redis",
		`<section id="faults">`, "3/3 unsafe", `<section id="plots">`, `alt="latency_contended_c8_h1ms"`, `alt="faults_heatmap"`,
		`<section id="tables">`, `<section id="timelines">`, `<svg class="lanes"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	// Every plot is on the page, one of a kind the page does not know too.
	pngs, _ := filepath.Glob(filepath.Join(dir, "plots", "*.png"))
	if len(pngs) == 0 {
		t.Fatalf("the fixture has no plots")
	}
	for _, p := range pngs {
		if name := strings.TrimSuffix(filepath.Base(p), ".png"); !strings.Contains(page, `alt="`+name+`"`) {
			t.Errorf("report.html lacks the plot %s", name)
		}
	}
	if refs := outsideRefs(b); len(refs) > 0 {
		t.Errorf("report.html refers outside itself: %v", refs)
	}
	// The verdicts come first.
	if v, f := strings.Index(page, `id="verdicts"`), strings.Index(page, `id="faults"`); v < 0 || v > f {
		t.Errorf("verdicts at %d, fault matrix at %d; want the verdicts first", v, f)
	}
}

func TestReportInChromium(t *testing.T) {
	needChromium(t)
	dir := fixture(t)
	p := render(t, dir)
	png := filepath.Join(t.TempDir(), "report.png")
	if err := Check(t.Context(), p, png); err != nil {
		t.Fatalf("Check = %v", err)
	}
	t.Logf("screenshot: %s", png)
}

// TestCheckFindsBrokenReports breaks a good report in each way the check
// must catch.
func TestCheckFindsBrokenReports(t *testing.T) {
	needChromium(t)
	dir := fixture(t)
	good, err := os.ReadFile(render(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		old, new string
		want     string // in Check's error
	}{
		{"console error", "</main>", `<script>console.error("boom")</script></main>`, `console: "boom"`},
		{"script error", "</main>", `<script>undefinedFunction()</script></main>`, "console: \"Uncaught ReferenceError"},
		{"broken image", `src="data:image/png;base64,`, `src="data:image/png;base64,AAAA`, "broken image"},
		{"empty section", "</main>", `<section id="nothing"><h2>Nothing</h2> </section></main>`, "empty section #nothing"},
		{"image from outside", "</main>", `<img src="https://example.com/x.png" alt="x"></main>`, "reference outside the page: https://example.com/x.png"},
		{"link to a missing anchor", "</main>", `<a href="#tl-999">x</a></main>`, "link to a missing anchor #tl-999"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(string(good), tt.old) {
				t.Fatalf("the report lacks %q", tt.old)
			}
			bad := filepath.Join(t.TempDir(), "report.html")
			if err := os.WriteFile(bad, []byte(strings.Replace(string(good), tt.old, tt.new, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			err := Check(context.Background(), bad, "")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Check(%s) = %v; want an error with %q", tt.name, err, tt.want)
			}
			t.Logf("Check = %v", err)
		})
	}
}

func TestWriteBadInput(t *testing.T) {
	if _, err := Write(t.TempDir(), nil); err == nil || !strings.Contains(err.Error(), "neither summary.json nor faults.json") {
		t.Errorf("Write(empty dir) = %v; want an error naming what is missing", err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "summary.json"), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(dir, nil); err == nil || !strings.Contains(err.Error(), "summary.json") {
		t.Errorf("Write(bad summary.json) = %v; want an error naming the file", err)
	}
	if _, err := Render(t.TempDir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Render(no locks.json) = %v; want a not-exist error", err)
	}
}
