package labs

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden, the README output blocks and testdata/exercise.sha256")

// checkGolden compares a run's output with testdata/<TestName>.golden and
// with the lab README's output block for the test, after masking what
// changes from run to run (times, pids, ports). With -update it rewrites
// both from this run, so the README shows real output.
func checkGolden(t *testing.T, got string) {
	t.Helper()
	name := strings.ReplaceAll(t.Name(), "/", "_")
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := updateReadme(name, got); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no golden file %s: run go test -run '^%s$' -update", path, name)
	}
	if mask(string(want)) != mask(got) {
		t.Errorf("output differs from %s (times, pids and ports masked); if the change is intended, run go test -run '^%s$' -update\n--- got:\n%s--- want:\n%s", path, name, got, want)
	}
	block, err := readmeBlock(name)
	if err != nil {
		t.Fatal(err)
	}
	if mask(block) != mask(string(want)) {
		t.Errorf("README.md's output block for %s differs from %s: run go test -run '^%s$' -update", name, path, name)
	}
}

const readme = "README.md"

func markers(name string) (begin, end string) {
	return "<!-- output: " + name + " -->\n```text\n", "```\n<!-- /output -->"
}

// readmeBlock returns the text inside the README's output block for name.
func readmeBlock(name string) (string, error) {
	b, err := os.ReadFile(readme)
	if err != nil {
		return "", err
	}
	begin, end := markers(name)
	s := string(b)
	i := strings.Index(s, begin)
	if i < 0 {
		return "", &readmeError{name}
	}
	rest := s[i+len(begin):]
	j := strings.Index(rest, end)
	if j < 0 {
		return "", &readmeError{name}
	}
	return rest[:j], nil
}

func updateReadme(name, got string) error {
	b, err := os.ReadFile(readme)
	if err != nil {
		return err
	}
	begin, end := markers(name)
	s := string(b)
	i := strings.Index(s, begin)
	if i < 0 {
		return &readmeError{name}
	}
	j := strings.Index(s[i+len(begin):], end)
	if j < 0 {
		return &readmeError{name}
	}
	s = s[:i+len(begin)] + got + s[i+len(begin)+j:]
	return os.WriteFile(readme, []byte(s), 0o644)
}

type readmeError struct{ name string }

func (e *readmeError) Error() string {
	begin, end := markers(e.name)
	return "README.md has no output block for " + e.name + "; add\n" + begin + end + "\nand run go test -update"
}

var (
	timeColumn = regexp.MustCompile(`(?m)^ *\d+  `)
	durations  = regexp.MustCompile(`\d+(\.\d+)?(-\d+(\.\d+)?)?( ?)(ms|µs|s)\b`)
	pids       = regexp.MustCompile(`pid \d+`)
	ports      = regexp.MustCompile(`127\.0\.0\.1:\d+`)
)

// mask blanks what differs between two runs of a deterministic scenario.
func mask(s string) string {
	s = timeColumn.ReplaceAllString(s, "      #  ")
	s = durations.ReplaceAllString(s, "#$4$5")
	s = pids.ReplaceAllString(s, "pid #")
	return ports.ReplaceAllString(s, "127.0.0.1:#")
}

// exercisePristine reports whether exercise.go is as shipped: its SHA-256
// equals testdata/exercise.sha256. With -update it records the current
// exercise.go as the shipped one.
func exercisePristine(t *testing.T) bool {
	t.Helper()
	src, err := os.ReadFile("exercise.go")
	if err != nil {
		t.Fatalf("labs: %v", err)
	}
	sum := sha256.Sum256(src)
	got := hex.EncodeToString(sum[:])
	path := filepath.Join("testdata", "exercise.sha256")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return true
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("labs: no %s: run go test -run Exercise -update on the untouched exercise", path)
	}
	return strings.TrimSpace(string(want)) == got
}
