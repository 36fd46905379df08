package labs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The lab READMEs are what a learner reads first, and TRAINING.md what a
// trainer plans with. These tests hold them to what CONTRIBUTING.md asks
// of a lab's README: the core path first, with its time; no link a reader
// of the repository cannot follow; sources cited by their titles.

// corePath is the line that opens a lab README's core path: its time, in
// the shape TRAINING.md's timings are given in.
var corePath = regexp.MustCompile(`(?m)^\*\*Core path: about \d+ min\*\*`)

// mdLink finds a Markdown link's target, inline ([text](target)) or as a
// reference definition ([label]: target), and an HTML href.
var mdLink = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)|(?m)^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)|href="([^"]+)"`)

// uncited are the words that name a source its reader does not have,
// rather than citing it by title.
var uncited = regexp.MustCompile(`(?i)\bseeds?\b|\bfield notes\b`)

// docs returns the lab READMEs and the other Markdown at the repository's
// root that the checks apply to, relative to this package's directory.
func docs(t *testing.T) (labReadmes, others []string) {
	t.Helper()
	labReadmes, err := filepath.Glob("[0-9][0-9]-*/README.md")
	if err != nil || len(labReadmes) == 0 {
		t.Fatalf("no lab READMEs under labs/ (%v)", err)
	}
	others, err = filepath.Glob("../*.md")
	if err != nil {
		t.Fatal(err)
	}
	return labReadmes, others
}

func TestLabReadmesOpenWithTheirCorePath(t *testing.T) {
	labReadmes, _ := docs(t)
	for _, path := range labReadmes {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		loc := corePath.FindStringIndex(s)
		if loc == nil {
			t.Errorf("%s has no core path line: want a line starting %q before its first section", path, "**Core path: about N min**")
			continue
		}
		if h := strings.Index(s, "\n## "); h >= 0 && h < loc[0] {
			t.Errorf("%s: the core path line comes after section %q; want it before the first section, so that the core path comes first", path, firstLine(s[h+1:]))
		}
	}
}

func TestDocsLinkOnlyInsideTheRepository(t *testing.T) {
	labReadmes, others := docs(t)
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range append(labReadmes, others...) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, target := range links(string(b)) {
			if problem := checkLink(root, filepath.Dir(path), target); problem != "" {
				t.Errorf("%s links to %q: %s", path, target, problem)
			}
		}
	}
}

func TestDocsCiteSourcesByTitle(t *testing.T) {
	labReadmes, others := docs(t)
	for _, path := range append(labReadmes, others...) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if w := uncited.FindString(line); w != "" {
				t.Errorf("%s:%d says %q, a source its reader does not have: cite the source by its title\n\t%s", path, i+1, w, strings.TrimSpace(line))
			}
		}
	}
}

// links returns every link target in Markdown text, outside code, and
// every relative path given as inline code ("`../shared/notes.md`"): a
// reader follows those by hand.
func links(md string) []string {
	var out []string
	for _, m := range mdLink.FindAllStringSubmatch(stripCode(md), -1) {
		for _, g := range m[1:] {
			if g != "" {
				out = append(out, g)
			}
		}
	}
	for _, m := range codePath.FindAllStringSubmatch(fenced.ReplaceAllString(md, ""), -1) {
		out = append(out, m[1])
	}
	return out
}

var (
	fenced     = regexp.MustCompile("(?ms)^\\s*```.*?^\\s*```")
	inlineCode = regexp.MustCompile("`[^`\n]*`")
	// codePath is inline code that is a path relative to the file.
	codePath = regexp.MustCompile("`(\\.\\.?/[^`\\s]*)`")
)

// stripCode removes fenced code blocks and inline code, where a bracket
// and a parenthesis are code, not a link.
func stripCode(md string) string {
	return inlineCode.ReplaceAllString(fenced.ReplaceAllString(md, ""), "")
}

// checkLink says what is wrong with a link from a file in dir, or "" when
// it is a web link, an anchor in the page, or a path inside the
// repository that exists.
func checkLink(root, dir, target string) string {
	switch {
	case strings.HasPrefix(target, "https://"), strings.HasPrefix(target, "http://"), strings.HasPrefix(target, "mailto:"):
		return ""
	case strings.HasPrefix(target, "#"):
		return ""
	case strings.Contains(target, "://"):
		return "not a web link nor a path in the repository"
	}
	p := target
	if i := strings.IndexAny(p, "#?"); i >= 0 {
		p = p[:i]
	}
	if filepath.IsAbs(p) {
		return "an absolute path: a reader's checkout is elsewhere; link relative to this file"
	}
	abs, err := filepath.Abs(filepath.Join(dir, p))
	if err != nil {
		return err.Error()
	}
	if rel, err := filepath.Rel(root, abs); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "it leaves the repository: a reader of a clone does not have it"
	}
	if _, err := os.Stat(abs); err != nil {
		return "no such file in the repository"
	}
	return ""
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func TestCheckLink(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		target string
		ok     bool
	}{
		{"https://redis.io/docs/latest/develop/use/patterns/distributed-locks/", true},
		{"#the-exercise", true},
		{"../01-setnx-expire/", true},
		{"../01-setnx-expire/README.md#objectives", true},
		{"../../README.md", true},
		{"../../../shared/reference/lab-suites.md", false},
		{"../no-such-lab/", false},
		{"/work/shared/DESIGN.md", false},
		{"file://etc/passwd", false},
	} {
		got := checkLink(root, "00-two-instances", tc.target) == ""
		if got != tc.ok {
			t.Errorf("checkLink(%q) ok = %v; want %v", tc.target, got, tc.ok)
		}
	}
	md := "see [lab 01](../01-setnx-expire/) and `[x](not/a/link)`\n```\n[y](nor/this)\n`../in/a/block`\n```\n[ref]: ../02-check-then-set/ \"title\"\n<a href=\"../03-blind-delete/\">03</a>, in `../../shared/reference/notes.md`, `labs/doc.go`\n"
	got := strings.Join(links(md), " ")
	if want := "../01-setnx-expire/ ../02-check-then-set/ ../03-blind-delete/ ../../shared/reference/notes.md"; got != want {
		t.Errorf("links(...) = %q; want %q", got, want)
	}
}
