package labs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// WrongFix is a plausible wrong fix of a lab's exercise: what a learner
// might type into exercise.go instead of the right fix, written as edits to
// the exercise as shipped. Every warning and hint in the lab's README has
// the wrong fix that ignores it in the lab's table (see [WrongFixes]).
type WrongFix struct {
	// Name is the mistake, in the README's words.
	Name string
	// Edits turn the shipped exercise.go into the wrong fix, applied in
	// order.
	Edits []Edit
	// Caught is a phrase the exercise test's failure must contain: the
	// part of its message that names the mistake. A wrong fix caught for
	// another reason (a timeout, a panic) does not count.
	Caught string
	// Right marks the opposite: a right fix, which the exercise tests must
	// pass (Caught is then empty). A table may hold one to prove that the
	// checks can be passed the way the README's hints lead, where no lock
	// package shows it (a release with no script, say).
	Right bool
}

// Edit replaces Old, which must occur exactly once in the file as edited
// so far, with New; with ToEnd, everything from Old to the end of the file;
// with ToFuncEnd, everything from Old to the end of the function it stands
// in (up to the line break before the function's closing brace). With
// Script, it replaces instead the Lua source of the script the file
// declares as Script = redis.NewScript(`...`) (see [ReplaceScript]).
type Edit struct {
	Old, New  string
	ToEnd     bool
	ToFuncEnd bool
	Script    string
}

// Replace is an [Edit] of old alone.
func Replace(old, new string) Edit { return Edit{Old: old, New: new} }

// ReplaceInFunc is an [Edit] of everything from old to the end of the
// function old stands in: for a wrong fix that rewrites a function's code
// below a line, without the table copying the rest of the shipped code.
func ReplaceInFunc(old, new string) Edit { return Edit{Old: old, New: new, ToFuncEnd: true} }

// ReplaceScript is an [Edit] of the Lua source of the script exercise.go
// declares as name, on a line of its own:
//
//	var name = redis.NewScript(`
//	...the source...`)
//
// src replaces what stands between the line break after the opening
// backquote and the closing one: a wrong fix that rewrites a script need
// not copy the shipped one.
func ReplaceScript(name, src string) Edit { return Edit{Script: name, New: src} }

// ReplaceFrom is an [Edit] of everything from old to the end of the file:
// for a wrong fix that rewrites the exercise's code below a line.
func ReplaceFrom(old, new string) Edit { return Edit{Old: old, New: new, ToEnd: true} }

// wrongFixesEnv turns on [WrongFixes]; make test sets it.
const wrongFixesEnv = "LOCKLAB_WRONG_FIXES"

// wrongFixTimeout bounds one wrong fix: its build and its exercise tests.
const wrongFixTimeout = 5 * time.Minute

// wrongFixSlots bounds how many wrong fixes of a lab are built and run at
// once: two keep both cores of a small machine busy (a link is mostly one
// core) without crowding the exercise runs, whose servers and clients
// need CPU too.
var wrongFixSlots = make(chan struct{}, 2)

// WrongFixes proves that the lab's exercise tests catch every wrong fix in
// fixes, each with a message that names the mistake:
//
//	func TestLab05_WrongFixes(t *testing.T) { labs.WrongFixes(t, wrongFixes) }
//
// For each fix it applies the edits to exercise.go as shipped, builds the
// lab's tests with -tags exercise and the edited file in its place (go
// test -overlay: the working tree is not touched), runs the lab's exercise
// tests (TestLabNN_Exercise...) and demands that they fail with the fix's
// Caught phrase in their output. The variants are built without -race, a
// link several times quicker (the exercise tests catch a fix by what it
// does, never by a data race), and run two at a time, each a subtest with
// its own verdict; the first runs alone, filling the build cache the
// others share.
//
// It runs when LOCKLAB_WRONG_FIXES is set (make test sets it); a plain go
// test skips it, so a learner's loop stays fast. It skips, too, when
// exercise.go has been edited: the edits apply to the exercise as shipped
// (make reset LAB=NN restores it).
func WrongFixes(t *testing.T, fixes []WrongFix) {
	t.Helper()
	if os.Getenv(wrongFixesEnv) == "" {
		t.Skipf("proving the wrong fixes caught builds the lab once per fix: set %s=1 (make test does), or run make wrongfixes LAB=%s", wrongFixesEnv, labNumber())
	}
	if exerciseMode {
		t.Skip("run without -tags exercise: each wrong fix is built with it")
	}
	if !exercisePristine(t) {
		t.Skipf("exercise.go has been edited; the wrong fixes are edits of the shipped exercise: make reset LAB=%s", labNumber())
	}
	shipped, err := os.ReadFile("exercise.go")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range fixes {
		if names[f.Name] || f.Name == "" || (f.Caught == "") != f.Right || len(f.Edits) == 0 {
			t.Fatalf("labs: wrong fix %q: every fix needs a unique Name, Edits, and a Caught phrase unless it is Right", f.Name)
		}
		names[f.Name] = true
	}
	for i, f := range fixes {
		t.Run(testName(f.Name), func(t *testing.T) {
			if i > 0 {
				t.Parallel()
			}
			wrongFixSlots <- struct{}{}
			defer func() { <-wrongFixSlots }()
			src, err := f.apply(string(shipped))
			if err != nil {
				t.Fatalf("wrong fix %q: %v (update its edits to the shipped exercise.go)", f.Name, err)
			}
			start := time.Now()
			out, built, err := runWrongFix(t, src)
			var exit *exec.ExitError
			switch {
			case f.Right && err == nil:
				fmt.Printf("right fix passes: %s  build %.1fs, run %.1fs\n", f.Name, built.Seconds(), time.Since(start.Add(built)).Seconds())
			case f.Right:
				t.Errorf("right fix %q fails the exercise tests: %v\n%s", f.Name, err, out)
			case err == nil:
				t.Errorf("wrong fix %q passed the exercise tests: green does not mean right\n%s", f.Name, out)
			case !errors.As(err, &exit):
				t.Errorf("wrong fix %q: %v\n%s", f.Name, err, out)
			case !strings.Contains(out, f.Caught):
				t.Errorf("wrong fix %q was caught, but the failure does not name the mistake: want %q in\n%s", f.Name, f.Caught, out)
			default:
				fmt.Printf("wrong fix caught: %s (%q)  build %.1fs, run %.1fs\n", f.Name, f.Caught, built.Seconds(), time.Since(start.Add(built)).Seconds())
			}
		})
	}
}

// apply returns src with f's edits made.
func (f WrongFix) apply(src string) (string, error) {
	for i, e := range f.Edits {
		if e.Script != "" {
			var err error
			if src, err = replaceScript(src, e.Script, e.New); err != nil {
				return "", fmt.Errorf("edit %d: %w", i+1, err)
			}
			continue
		}
		switch n := strings.Count(src, e.Old); {
		case n == 1 && e.ToEnd:
			src = src[:strings.Index(src, e.Old)] + e.New
		case n == 1 && e.ToFuncEnd:
			at := strings.Index(src, e.Old)
			end := strings.Index(src[at:], "\n}\n")
			if end < 0 {
				return "", fmt.Errorf("edit %d: no function's end (a line \"}\") after %q in exercise.go", i+1, e.Old)
			}
			src = src[:at] + e.New + src[at+end:]
		case n == 1:
			src = strings.Replace(src, e.Old, e.New, 1)
		default:
			return "", fmt.Errorf("edit %d: %q occurs %d times in exercise.go; want exactly once", i+1, e.Old, n)
		}
	}
	return src, nil
}

// replaceScript returns src with the Lua source of the script declared
// as name replaced by lua (see [ReplaceScript]).
func replaceScript(src, name, lua string) (string, error) {
	open := name + " = redis.NewScript(`\n"
	if n := strings.Count(src, open); n != 1 {
		return "", fmt.Errorf("script %s: %q occurs %d times in exercise.go; want exactly once", name, open, n)
	}
	start := strings.Index(src, open) + len(open)
	end := strings.Index(src[start:], "`)")
	if end < 0 {
		return "", fmt.Errorf("script %s: no closing %q in exercise.go", name, "`)")
	}
	return src[:start] + lua + src[start+end:], nil
}

var nonWord = regexp.MustCompile(`[^A-Za-z0-9]+`)

// testName turns a fix's name into a subtest name.
func testName(name string) string {
	return strings.Trim(nonWord.ReplaceAllString(name, "_"), "_")
}

// runWrongFix builds the lab's tests with src as exercise.go and runs its
// exercise tests, returning their combined output, how long the build
// took, and the run's error (an *exec.ExitError when a test failed).
func runWrongFix(t *testing.T, src string) (string, time.Duration, error) {
	t.Helper()
	dir := t.TempDir()
	here, err := filepath.Abs("exercise.go")
	if err != nil {
		return "", 0, err
	}
	variant := filepath.Join(dir, "exercise.go")
	if err := os.WriteFile(variant, []byte(src), 0o644); err != nil {
		return "", 0, err
	}
	overlay, err := json.Marshal(map[string]map[string]string{"Replace": {here: variant}})
	if err != nil {
		return "", 0, err
	}
	overlayPath := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlayPath, overlay, 0o644); err != nil {
		return "", 0, err
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", 0, fmt.Errorf("the go command is not on PATH (go test puts it there): %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wrongFixTimeout)
	defer cancel()
	bin := filepath.Join(dir, "lab.test")
	// No -race, and no symbols or DWARF: a quicker link.
	args := []string{"test", "-c", "-tags", "exercise", "-overlay", overlayPath, "-ldflags=-s -w", "-o", bin}
	start := time.Now()
	build := exec.CommandContext(ctx, goTool, append(args, ".")...)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("the wrong fix does not compile: go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	built := time.Since(start)
	cmd := exec.CommandContext(ctx, bin, "-test.run", `^TestLab\d+_Exercise`, "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), raceExitEnv())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	if ctx.Err() != nil {
		return out.String(), built, fmt.Errorf("timed out after %v", wrongFixTimeout)
	}
	return out.String(), built, err
}
