package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/locklab/locklab/internal/module"
)

// exerciseTimeout bounds the exercise tests of one lab.
const exerciseTimeout = 5 * time.Minute

// status is where a learner is with one lab.
type status int

const (
	notStarted status = iota // exercise.go as shipped
	red                      // edited, and its exercise tests fail
	solved                   // edited, and its exercise tests pass
	noExercise               // the lab has no exercise
	noBuild                  // edited, and its tests do not compile
)

func (s status) String() string {
	return [...]string{"not started", "still red", "solved", "no exercise", "does not compile"}[s]
}

// lab is one labs/NN-topic directory.
type lab struct {
	num, dir, title string
	status          status
	why             string // for a red exercise: the first line of its failure
}

var labDir = regexp.MustCompile(`^(\d\d)-[a-z0-9-]+$`)

// findLabs lists the labs under root/labs, in order, with their titles and
// whether their exercise.go is as shipped.
func findLabs(root string) ([]*lab, error) {
	entries, err := os.ReadDir(filepath.Join(root, "labs"))
	if err != nil {
		return nil, err
	}
	var out []*lab
	for _, e := range entries {
		m := labDir.FindStringSubmatch(e.Name())
		if !e.IsDir() || m == nil {
			continue
		}
		l := &lab{num: m[1], dir: filepath.Join("labs", e.Name()), title: strings.TrimPrefix(e.Name(), m[1]+"-")}
		if t, err := readmeTitle(filepath.Join(root, l.dir, "README.md")); err == nil {
			l.title = t
		}
		pristine, err := pristine(filepath.Join(root, l.dir))
		switch {
		case errors.Is(err, os.ErrNotExist):
			l.status = noExercise
		case err != nil:
			return nil, err
		case !pristine:
			l.status = red // until its tests say otherwise
		}
		out = append(out, l)
	}
	return out, nil
}

// readmeTitle returns what follows "Lab NN: " in a README's first heading.
func readmeTitle(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if h, ok := strings.CutPrefix(sc.Text(), "# "); ok {
			if _, t, ok := strings.Cut(h, ": "); ok {
				return t, nil
			}
			return h, nil
		}
	}
	return "", errors.New("no title")
}

// pristine reports whether dir's exercise.go is as shipped: its SHA-256 is
// the one in testdata/exercise.sha256.
func pristine(dir string) (bool, error) {
	want, err := os.ReadFile(filepath.Join(dir, "testdata", "exercise.sha256"))
	if err != nil {
		return false, err
	}
	src, err := os.ReadFile(filepath.Join(dir, "exercise.go"))
	if err != nil {
		return false, err
	}
	return sha(src) == strings.TrimSpace(string(want)), nil
}

func sha(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// progress finds the labs and runs the exercise tests of every edited
// exercise, two at a time, saying on log which it is testing.
func progress(root string, log io.Writer) ([]*lab, error) {
	labs, err := findLabs(root)
	if err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	slots := make(chan struct{}, 2)
	for _, l := range labs {
		if l.status != red {
			continue
		}
		fmt.Fprintf(log, "testing your exercise for lab %s (go test -tags exercise ./%s/)\n", l.num, l.dir)
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			l.status, l.why = testExercise(root, l.dir)
		})
	}
	wg.Wait()
	return labs, nil
}

// testExercise runs a lab's exercise tests as make exercise does. Passing
// runs are cached by go test, so a second progress is quick.
func testExercise(root, dir string) (status, string) {
	ctx, cancel := context.WithTimeout(context.Background(), exerciseTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "test", "-tags", "exercise", "-run", `^TestLab\d+_Exercise`, "./"+filepath.ToSlash(dir)+"/")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err == nil {
		return solved, ""
	}
	if ctx.Err() != nil {
		return red, fmt.Sprintf("its tests ran past %v", exerciseTimeout)
	}
	if why, ok := buildFailure(out); ok {
		return noBuild, why
	}
	return red, firstFailure(out)
}

// buildFailure reports whether a go test run failed to build the lab (a
// compile error, or go vet refusing the code) rather than failing a test,
// with the first error the compiler gave ("exercise.go:68:17: undefined:
// x"): an exercise that does not compile is not "still red", and the
// learner should read the compiler's message, not look for a violation.
func buildFailure(out []byte) (string, bool) {
	if !bytes.Contains(out, []byte("[build failed]")) && !bytes.Contains(out, []byte("[setup failed]")) {
		return "", false
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	header := false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "# "):
			header = true
		case header && line != "" && !strings.HasPrefix(line, "FAIL"):
			if _, rest, ok := strings.Cut(line, "/labs/"); ok && strings.Contains(line, ".go:") {
				line = "labs/" + rest // the file as the learner knows it, not the absolute path
			}
			return line, true
		}
	}
	return "go test could not build it: run make exercise LAB=NN to see why", true
}

// firstFailure picks the line of a failing run a learner should read
// first: a violation, else the first test failure message.
func firstFailure(out []byte) string {
	var first string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "VIOLATION: "):
			return line
		case first == "" && strings.Contains(line, "_test.go:") || first == "" && strings.HasPrefix(line, "# "):
			first = line
		}
	}
	if first == "" {
		return "its tests fail: run make exercise LAB=NN to see why"
	}
	return first
}

// summary is the one-screen progress report.
func summary(labs []*lab) string {
	var b strings.Builder
	done, total := 0, 0
	var next *lab
	for _, l := range labs {
		if l.status == noExercise {
			continue
		}
		total++
		if l.status == solved {
			done++
		} else if next == nil {
			next = l
		}
	}
	fmt.Fprintf(&b, "\nYour progress: %d of %d exercises solved\n", done, total)
	for _, l := range labs {
		line := fmt.Sprintf("  %s  %-34s %s", l.num, clip(l.title, 34), l.status)
		if l.why != "" {
			line += ": " + clip(l.why, 100)
		}
		b.WriteString(line + "\n")
	}
	if next != nil {
		fmt.Fprintf(&b, "Next: lab %s. Read %s/README.md, edit %s/exercise.go, run make exercise LAB=%s.\n", next.num, next.dir, next.dir, next.num)
	} else {
		b.WriteString("Every exercise is solved.\n")
	}
	b.WriteString("make progress shows this again; make reset LAB=NN restores an exercise as shipped.\n")
	return b.String()
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// moduleRoot finds the locklab module's root above the working directory.
func moduleRoot() (string, error) {
	return module.Root("run it inside the locklab repository (no go.mod of github.com/locklab/locklab above here)")
}
