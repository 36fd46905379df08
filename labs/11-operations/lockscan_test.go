package lab11_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The lab runs the real command, cmd/lockscan, as an operator's cron job
// would: built once per test binary (go build, from the module root), kept
// in memory, and written into each test's temporary directory, so that
// nothing is left on disk when the tests end.
var lockscanBuild struct {
	once sync.Once
	bin  []byte
	err  error
}

// lockscanTimeout bounds one run of lockscan (its own -timeout, and the
// process's lifetime). A scan of a one-key server takes milliseconds.
const lockscanTimeout = 10 * time.Second

// lockscanBinary returns the path of a lockscan binary in t's temporary
// directory, building cmd/lockscan on first use.
func lockscanBinary(t *testing.T) string {
	t.Helper()
	lockscanBuild.once.Do(func() { lockscanBuild.bin, lockscanBuild.err = buildLockscan() })
	if lockscanBuild.err != nil {
		t.Fatalf("lab11: build cmd/lockscan: %v", lockscanBuild.err)
	}
	path := filepath.Join(t.TempDir(), "lockscan")
	if err := os.WriteFile(path, lockscanBuild.bin, 0o755); err != nil {
		t.Fatalf("lab11: %v", err)
	}
	return path
}

// buildLockscan builds cmd/lockscan and returns the binary. It builds with
// -race when this test binary was, so the build reuses the packages the
// test build compiled.
func buildLockscan() ([]byte, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	// go test caches a passing run by the files the test binary read: stat
	// the command's sources, so that a change to them reruns this lab.
	src := filepath.Join(root, "cmd", "lockscan")
	files, err := os.ReadDir(src)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(src, f.Name())); err != nil {
			return nil, err
		}
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("the go command is not on PATH (go test puts it there): %w", err)
	}
	dir, err := os.MkdirTemp("", "lab11-lockscan-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "lockscan")
	args := []string{"build", "-o", out}
	if raceEnabled {
		args = append(args, "-race")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goTool, append(args, "./cmd/lockscan")...)
	cmd.Dir = root
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, msg)
	}
	return os.ReadFile(out)
}

// moduleRoot finds the locklab module's root: the nearest directory above
// the working directory (the lab's package directory) with a go.mod that
// declares github.com/locklab/locklab.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(mod, []byte("module github.com/locklab/locklab\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod of module github.com/locklab/locklab above the working directory")
		}
		dir = parent
	}
}

// scanResult is one run of lockscan: its exit status and output.
type scanResult struct {
	status int
	stdout string
	stderr string
}

// runLockscan runs the binary with args and returns its exit status and
// output. Failing to start it, or a run that outlives lockscanTimeout, is
// an error; a non-zero exit status is not.
func runLockscan(ctx context.Context, bin string, args ...string) (scanResult, error) {
	ctx, cancel := context.WithTimeout(ctx, lockscanTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(args, "-timeout", lockscanTimeout.String())...)
	// A binary built with -race sleeps 1s before it exits with status 0
	// unless told otherwise.
	cmd.Env = append(os.Environ(), "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := scanResult{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit) && exit.Exited():
		r.status = exit.ExitCode()
	case err != nil:
		return r, fmt.Errorf("lockscan %s: %w\n%s", strings.Join(args, " "), err, r.stderr)
	}
	return r, nil
}

// scanReport is the part of lockscan's JSON report (schema lockscan/v1,
// cmd/lockscan/README.md) the lab reads.
type scanReport struct {
	Schema string `json:"schema"`
	Keys   int    `json:"keys"`
	Leaked int    `json:"leaked"`
	Locks  []struct {
		Key    string `json:"key"`
		Type   string `json:"type"`
		TTLMS  int64  `json:"ttl_ms"`
		Leaked bool   `json:"leaked"`
		Token  string `json:"token"`
	} `json:"locks"`
}

// reportLines returns the lines of lockscan's text report worth showing
// on the timeline: everything but blank lines and the closing list of
// every lock (its TTL column changes width from run to run).
func reportLines(report string) []string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(report))
	skip := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "Locks":
			skip = true // until the next blank line
			continue
		case strings.TrimSpace(line) == "":
			skip = false
			continue
		case skip:
			continue
		}
		lines = append(lines, line)
	}
	return lines
}

// decode parses lockscan's JSON report.
func decode(out string) (scanReport, error) {
	var r scanReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		return r, fmt.Errorf("lockscan -json: %w\n%s", err, out)
	}
	if r.Schema != "lockscan/v1" {
		return r, fmt.Errorf("lockscan -json: schema %q; want lockscan/v1", r.Schema)
	}
	return r, nil
}
