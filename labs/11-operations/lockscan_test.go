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

	"github.com/locklab/locklab/internal/module"
	"github.com/locklab/locklab/labs"
	"github.com/locklab/locklab/naive"
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

// moduleRoot finds the locklab module's root above the working directory.
func moduleRoot() (string, error) {
	return module.Root("no go.mod of module github.com/locklab/locklab above the working directory")
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

// Part 1. crashThenScan: A, in a child process, takes order 1001's lock
// and is killed at once: for SETNX+EXPIRE, between the two commands. Then
// the operator's cron job runs lockscan against the server. It exits with
// status 3 when it finds a lock key without a TTL: a leak, the alert.
func crashThenScan(bin string) labs.Scenario {
	return func(s *labs.Scene, impl *labs.Impl) {
		s.TTL = leakTTL
		a := s.Process("A", impl) // a real process, so it can really die

		// As in lab 01: A dies right after taking the lock, between SETNX
		// and EXPIRE for the broken lock, once Lock returns for the fixed.
		a.ParkAt(naive.HookAfterSetNX)
		lock := a.Go("lock", "")
		if _, parked := a.WaitParkedOr(lock, naive.HookAfterSetNX); !parked {
			s.Must(lock.Err())
		}
		a.Kill()
		holder, err := s.Redis().Get(s.Ctx, s.Key).Result()
		s.Must(err) // the key is there, with or without a TTL

		// The cron job: the real command, first as a person reads it...
		addr := s.Node().Addr()
		s.Note("$ lockscan -addr %s", addr)
		text, err := runLockscan(s.Ctx, bin, "-addr", addr)
		s.Must(err)
		for _, line := range reportLines(text.stdout) {
			s.Note("%s", strings.ReplaceAll(line, holder, "a1")) // the raw token is random
		}
		s.Note("lockscan exit status %d", text.status)

		// ...then as a program reads it: the JSON report must say the same.
		js, err := runLockscan(s.Ctx, bin, "-addr", addr, "-json")
		s.Must(err)
		report, err := decode(js.stdout)
		s.Must(err)
		s.Must(checkReport(s, report, js.status, text.status, holder))

		if text.status == exitLeaks {
			s.Violation("lockscan found %s without a TTL and exited with status %d: A died between SETNX and EXPIRE, and its lock will never expire",
				s.Key, exitLeaks)
			// What the operator does next, once sure the holder is dead.
			s.Must(s.Redis().Del(s.Ctx, s.Key).Err())
			s.Fault("operator: DEL %s (its holder A is dead)", s.Key)
		}
	}
}

// checkReport checks lockscan's JSON report against the key as the
// harness sees it, and the two runs' exit statuses against each other.
func checkReport(s *labs.Scene, r scanReport, jsonStatus, textStatus int, holder string) error {
	if jsonStatus != textStatus {
		return fmt.Errorf("lockscan -json exited with status %d, without -json %d", jsonStatus, textStatus)
	}
	if r.Keys != 1 || len(r.Locks) != 1 {
		return fmt.Errorf("lockscan -json found %d keys (%d listed); want 1, %s", r.Keys, len(r.Locks), s.Key)
	}
	l := r.Locks[0]
	switch {
	case l.Key != s.Key || l.Type != "string" || l.Token != holder:
		return fmt.Errorf("lockscan -json lists key %q type %q token %q; want %q, string, the holder's token", l.Key, l.Type, l.Token, s.Key)
	case l.Leaked != (l.TTLMS == -1) || (r.Leaked == 1) != l.Leaked:
		return fmt.Errorf("lockscan -json: leaked %v, ttl_ms %d, %d leaked in all: inconsistent", l.Leaked, l.TTLMS, r.Leaked)
	case (jsonStatus == exitLeaks) != l.Leaked:
		return fmt.Errorf("lockscan exited with status %d, and its report says leaked = %v", jsonStatus, l.Leaked)
	}
	return nil
}

func TestLab11_BrokenCrashLeaksLock(t *testing.T) {
	needOwnServer(t)
	labs.Broken(t, titleLeak, crashThenScan(lockscanBinary(t)), setnxThenExpire)
}

func TestLab11_FixedNoLeakAfterCrash(t *testing.T) {
	needOwnServer(t)
	labs.Fixed(t, titleLeak, crashThenScan(lockscanBinary(t)), setNXPX)
}

// needOwnServer skips part 1 on servers from LOCKLAB_REDIS_ADDRS: lockscan
// reports every lock key on the server it scans, so the lab needs a server
// of its own to show exactly one.
func needOwnServer(t *testing.T) {
	t.Helper()
	if strings.TrimSpace(os.Getenv("LOCKLAB_REDIS_ADDRS")) != "" {
		t.Skip("part 1 scans the whole server for lock keys and needs one of its own: unset LOCKLAB_REDIS_ADDRS to let the rig start it")
	}
}
