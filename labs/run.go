package labs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/internal/history"
)

// The ways to run a scenario. Each prints the MIT-style banner, checks the
// history for overlapping critical sections, stale writes and the
// violations the scenario declared, and logs the timeline.

// outcome is what a run must show.
type outcome int

const (
	wantViolation outcome = iota
	wantSafe
)

// Broken runs sc against a broken lock and passes only if the history
// shows a violation; it logs the timeline and checks it against the golden
// file. A run with no violation fails: the harness went blind. With
// LOCKLAB_RED=1 (make red) it demands safety instead, to show the broken
// lock failing as a red test.
func Broken(t *testing.T, title string, sc Scenario, impl *Impl) {
	t.Helper()
	if os.Getenv("LOCKLAB_RED") != "" {
		run(t, title, "broken, run as if it were correct (make red)", sc, impl, wantSafe, runOpts{})
		return
	}
	run(t, title, "broken", sc, impl, wantViolation, runOpts{golden: true})
}

// Fixed runs sc against a correct lock and passes only if the history
// shows no violation; it logs the timeline and checks the golden file.
func Fixed(t *testing.T, title string, sc Scenario, impl *Impl) {
	t.Helper()
	run(t, title, "fixed", sc, impl, wantSafe, runOpts{golden: true})
}

// Safe is [Fixed] without a golden file, for a scenario whose timeline
// differs from run to run or is too long to show (a sweep over every gap
// between two commands, say): it proves a correct lock passes a check that
// the lab's exercise test also runs.
func Safe(t *testing.T, title string, sc Scenario, impl *Impl) {
	t.Helper()
	run(t, title, "fixed", sc, impl, wantSafe, runOpts{})
}

// Caught is [Broken] without a golden file: it proves a check catches a
// broken lock.
func Caught(t *testing.T, title string, sc Scenario, impl *Impl) {
	t.Helper()
	run(t, title, "broken", sc, impl, wantViolation, runOpts{})
}

// Exercise runs sc against the learner's exercise. Built with -tags
// exercise it demands safety: red until the exercise is fixed. Otherwise it
// proves an untouched exercise.go is caught (so every exercise starts red)
// and skips once exercise.go has been edited.
//
// A lab may have several exercise tests (TestLabNN_Exercise,
// TestLabNN_ExerciseStall...): the exercise is solved when all of them
// pass, and each must catch the untouched exercise.
//
// The exercise's clients spread their commands over their pooled
// connections ([Env.Spread]), and a failure does not print the servers'
// logs: it is the exercise's, not the rig's.
func Exercise(t *testing.T, title string, sc Scenario, impl *Impl) {
	t.Helper()
	opts := runOpts{spread: true, exercise: true, timeout: exerciseTimeout}
	if exerciseMode {
		run(t, title, "exercise", sc, impl, wantSafe, opts)
		return
	}
	if !exercisePristine(t) {
		t.Skipf("exercise.go has been edited: test your fix with `make exercise LAB=%s` (go test -tags exercise); `make progress` shows every lab", labNumber())
	}
	run(t, title, "exercise, untouched: must be caught", sc, impl, wantViolation, opts)
}

// runOpts are the ways runs differ.
type runOpts struct {
	golden bool // compare the timeline with testdata/<TestName>.golden and the README
	spread bool // clients spread commands over their connections (Env.Spread)
	// exercise: the lock under test is the learner's (see Scene.exercise).
	exercise bool
	// timeout is the scene's deadline; 0 means checkTimeout.
	timeout time.Duration
}

func run(t *testing.T, title, label string, sc Scenario, impl *Impl, want outcome, o runOpts) {
	t.Helper()
	start := time.Now()
	if o.timeout == 0 {
		o.timeout = checkTimeout
	}
	s := newScene(t, o.timeout)
	s.spread, s.exercise = o.spread, o.exercise
	sc(s, impl)
	events := s.hist.Events()
	findings := history.Check(events)
	timeline := history.Render(events, findings)
	stats := fmt.Sprintf("%4.1fs  %d clients  %d events", time.Since(start).Seconds(), s.clients, len(events))
	head := title + " " + label + ": "
	switch want {
	case wantViolation:
		if len(findings) == 0 {
			fmt.Printf("%sno violation ... FAIL  %s\n", head, stats)
			t.Fatalf("%sharness went blind: the broken lock showed no violation, so this run proves nothing\n%s", head, timeline)
		}
		head += "violation reproduced"
	case wantSafe:
		if len(findings) > 0 {
			fmt.Printf("%s%s ... FAIL  %s\n", head, plural(len(findings), "violation"), stats)
			t.Fatalf("%s%s\n%s", head, plural(len(findings), "violation"), timeline)
		}
		head += "no violation"
	}
	fmt.Printf("%s ... ok  %s\n", head, stats)
	t.Logf("%s\n%s", head, timeline)
	if o.golden {
		checkGolden(t, head+"\n"+timeline)
	}
}

// Run runs sc against impl with no expectation, banner or golden file and
// returns the history and what the checkers found, for tests of the
// harness and for labs that measure rather than judge.
func Run(t *testing.T, sc Scenario, impl *Impl) ([]history.Event, []history.Finding) {
	t.Helper()
	s := newScene(t, checkTimeout)
	sc(s, impl)
	events := s.hist.Events()
	return events, history.Check(events)
}

// labNumber is the NN of the lab directory the test runs in (labs/NN-topic).
func labNumber() string {
	dir, err := os.Getwd()
	if err != nil {
		return "NN"
	}
	n, _, ok := strings.Cut(filepath.Base(dir), "-")
	if !ok {
		return "NN"
	}
	return n
}

// Plural is "1 lock" or "n locks".
func Plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func plural(n int, what string) string { return Plural(n, what) }
