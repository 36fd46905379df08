package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
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
// go test shows a passing package's output only with -v, so on a terminal
// the summary is written to the terminal itself, once the labs' own test
// binaries have finished. The run is never cached: a stamp file it reads
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
	if err != nil {
		t.Fatal(err)
	}
	out := summary(labs)
	t.Log(log.String() + out)
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil && os.Getenv("CI") == "" {
		defer tty.Close()
		waitForLabs(2 * time.Minute)
		tty.WriteString(out)
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
