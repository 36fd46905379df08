package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestProgress is the progress summary at the end of go test ./labs/...:
// this package sorts after the labs, so its test runs last. It tests every
// edited exercise and never fails because one is still red: a learner's
// plain go test stays green, and the summary says what is left.
//
// go test shows a passing package's output only with -v or -json, so
// without them the summary is written where go test's own output goes (a
// terminal, a pipe, a file: see summaryOut), once the labs' own test
// binaries have finished; with them it is in this test's log. The run is never cached: a stamp file it reads
// is rewritten at the end, too recently for go test to cache the result
// (it caches no run that read a file changed in the last two seconds).
func TestProgress(t *testing.T) {
	// go test only looks at files inside the module for its cache: the
	// stamp is in testdata (and in .gitignore).
	stamp := filepath.Join("testdata", "progress.stamp")
	_, _ = os.ReadFile(stamp)
	defer func() {
		_ = os.MkdirAll("testdata", 0o755)
		_ = os.WriteFile(stamp, []byte(time.Now().String()+"\n"), 0o644)
	}()

	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	labs, err := progress(root, &log)
	if os.Getenv(summaryOnlyEnv) != "" { // TestSummaryGoesWhereGoTestWrites runs this test
		labs, err = []*lab{{num: "00", dir: "labs/00-a", title: "a", status: solved}}, nil
	}
	if err != nil {
		t.Fatal(err)
	}
	out := summary(labs)
	t.Log(log.String() + out)
	if os.Getenv("CI") != "" {
		return
	}
	if w, pad := summaryOut(); w != nil {
		defer w.Close()
		waitForLabs(2 * time.Minute)
		_, _ = io.WriteString(w, pad+out)
	}
}

// waitForLabs waits, at most d, until no lab's test binary started by the
// same go test is still running, so that the summary comes after their
// results.
func waitForLabs(d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) && siblingLabs() {
		time.Sleep(100 * time.Millisecond)
	}
}

// siblingLabs reports whether a lab's test binary (NN-topic.test) with
// our parent (the go command) is running.
func siblingLabs() bool {
	out, err := exec.Command("ps", "-A", "-o", "ppid=,args=").Output()
	if err != nil {
		return false
	}
	parent := strconv.Itoa(os.Getppid())
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != parent {
			continue
		}
		name := filepath.Base(f[1])
		if strings.HasSuffix(name, ".test") && labDir.MatchString(strings.TrimSuffix(name, ".test")) {
			return true
		}
	}
	return false
}

// TestReset restores an edited exercise from the git history, and keeps
// the learner's version beside it.
func TestReset(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	root := t.TempDir()
	dir := filepath.Join(root, "labs", "03-blind-delete")
	shipped := []byte("package lab03 // as shipped\n")
	write := func(path string, b []byte) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "go.mod"), []byte("module github.com/locklab/locklab\n"))
	write(filepath.Join(dir, "exercise.go"), shipped)
	write(filepath.Join(dir, "testdata", "exercise.sha256"), []byte(sha(shipped)+"\n"))
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", root, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	git("add", ".")
	git("commit", "-qm", "shipped")
	mine := []byte("package lab03 // my fix\n")
	write(filepath.Join(dir, "exercise.go"), mine)
	git("commit", "-qam", "my fix, committed") // reset must look past it

	var out bytes.Buffer
	if err := reset(root, "3", &out); err != nil {
		t.Fatalf("reset: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "exercise.go")); !bytes.Equal(got, shipped) {
		t.Errorf("exercise.go after reset = %q; want %q", got, shipped)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "exercise.go.mine")); !bytes.Equal(got, mine) {
		t.Errorf("exercise.go.mine = %q; want the learner's %q", got, mine)
	}

	// A second reset, of another version, keeps the first one: a solved
	// exercise was lost that way once.
	mine2 := []byte("package lab03 // my second try\n")
	write(filepath.Join(dir, "exercise.go"), mine2)
	out.Reset()
	if err := reset(root, "03", &out); err != nil {
		t.Fatalf("second reset: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "exercise.go.mine")); !bytes.Equal(got, mine) {
		t.Errorf("exercise.go.mine after a second reset = %q; want the first version kept, %q", got, mine)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "exercise.go.mine.2")); !bytes.Equal(got, mine2) {
		t.Errorf("exercise.go.mine.2 = %q; want the second version, %q", got, mine2)
	}
	if s := out.String(); !strings.Contains(s, "exercise.go.mine.2") || !strings.Contains(s, "earlier ones are kept too: exercise.go.mine") {
		t.Errorf("second reset says %q; want it to name the new copy and the earlier one it kept", s)
	}
	// The same version again is not kept twice.
	write(filepath.Join(dir, "exercise.go"), mine)
	out.Reset()
	if err := reset(root, "03", &out); err != nil || !strings.Contains(out.String(), "your version is in labs/03-blind-delete/exercise.go.mine (kept there by an earlier reset)") {
		t.Errorf("reset of a version kept already = %v, %q; want it to name the copy that holds it", err, out.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "exercise.go.mine.3")); err == nil {
		t.Error("a version already kept was kept again as exercise.go.mine.3")
	}

	if err := reset(root, "03", &out); err != nil || !strings.Contains(out.String(), "as shipped already") {
		t.Errorf("second reset = %v, %q; want it to say the exercise is as shipped", err, out.String())
	}
	if err := reset(root, "42", &out); err == nil {
		t.Error("reset of a lab that does not exist succeeded")
	}
}

// TestSummaryNamesTheNextLab: the summary counts solved exercises and
// points at the first lab left.
func TestSummaryNamesTheNextLab(t *testing.T) {
	got := summary([]*lab{
		{num: "00", dir: "labs/00-a", title: "a", status: solved},
		{num: "01", dir: "labs/01-b", title: "b", status: red, why: "VIOLATION: A and B both in the critical section"},
		{num: "02", dir: "labs/02-c", title: "c", status: notStarted},
	})
	for _, want := range []string{"1 of 3 exercises solved", "01  b", "still red: VIOLATION: A and B", "Next: lab 01", "make exercise LAB=01"} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
}

// summaryOnlyEnv makes TestProgress summarize one solved lab instead of
// testing the exercises, for TestSummaryGoesWhereGoTestWrites.
const summaryOnlyEnv = "LOCKLAB_LEARN_SUMMARY_ONLY"

// TestSummaryGoesWhereGoTestWrites: the summary at the end of go test
// ./labs/... is in go test's output wherever that goes, not only on a
// terminal: a pipe (go test | tee, an IDE), a file (go test > log, also
// past the go command's own next line) and -json (in the test's log).
func TestSummaryGoesWhereGoTestWrites(t *testing.T) {
	if os.Getenv(summaryOnlyEnv) != "" {
		t.Skip("inside the go test this test runs")
	}
	if runtime.GOOS != "linux" {
		t.Skip("the summary reaches a pipe or a file through /proc, on Linux; elsewhere it goes to the terminal")
	}
	const want = "Your progress: 1 of 1 exercises solved"
	gotest := func(stdout io.Writer, args ...string) {
		t.Helper()
		cmd := exec.Command("go", append([]string{"test", "-count=1", "-run", "^TestProgress$"}, append(args, ".")...)...)
		cmd.Env = append(os.Environ(), summaryOnlyEnv+"=1", "CI=")
		cmd.Stdout, cmd.Stderr = stdout, stdout
		if err := cmd.Run(); err != nil {
			t.Fatalf("go test %v: %v", args, err)
		}
	}
	var pipe bytes.Buffer // exec gives the child a pipe
	gotest(&pipe)
	if !strings.Contains(pipe.String(), want) {
		t.Errorf("go test | ...: the summary is missing from\n%s", pipe.String())
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gotest(f)
	b, _ := os.ReadFile(f.Name())
	if got := string(b); !strings.Contains(got, want) || !strings.Contains(got, "ok  \tgithub.com/locklab/locklab/labs/learn") {
		t.Errorf("go test > log: want the summary and go test's ok line intact, got\n%s", got)
	}
	var json bytes.Buffer
	gotest(&json, "-json")
	if !strings.Contains(json.String(), want) {
		t.Errorf("go test -json: the summary is missing from\n%s", json.String())
	}
	for _, line := range strings.Split(strings.TrimSpace(json.String()), "\n") {
		if !strings.HasPrefix(line, "{") {
			t.Errorf("go test -json: a line that is not JSON: %q", line)
		}
	}
}

// TestExerciseThatDoesNotCompile: progress says an exercise that does not
// compile does not compile, with the compiler's first error, instead of
// calling it still red (go test's real output for a compile error).
func TestExerciseThatDoesNotCompile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m")
	labdir := filepath.Join(dir, "labs", "03-blind-delete")
	if err := os.MkdirAll(labdir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, src := range map[string]string{
		filepath.Join(dir, "go.mod"):              "module example.com/m\n\ngo 1.21\n",
		filepath.Join(labdir, "exercise.go"):      "package lab03\n\nfunc Unlock() error { return undefinedThing() }\n",
		filepath.Join(labdir, "exercise_test.go"): "package lab03\n\nimport \"testing\"\n\nfunc TestLab03_Exercise(t *testing.T) {}\n",
	} {
		if err := os.WriteFile(name, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	st, why := testExercise(dir, filepath.Join("labs", "03-blind-delete"))
	if st != noBuild || why != "labs/03-blind-delete/exercise.go:3:30: undefined: undefinedThing" {
		t.Errorf("testExercise of a lab that does not compile = %v, %q; want does not compile, with the compiler's error", st, why)
	}
	got := summary([]*lab{{num: "03", dir: "labs/03-blind-delete", title: "the blind DEL", status: st, why: why}})
	if !strings.Contains(got, "does not compile: labs/03-blind-delete/exercise.go:3:30: undefined") || strings.Contains(got, "still red") {
		t.Errorf("summary of a lab that does not compile:\n%s", got)
	}
}
