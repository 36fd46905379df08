package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locklab/locklab/bench/speed"
	"github.com/locklab/locklab/internal/rig"
	"github.com/redis/go-redis/v9"
)

// benchKeys lists every key on the server (SCAN), for the leftover checks.
func benchKeys(t *testing.T, c *redis.Client) []string {
	t.Helper()
	var out []string
	var cursor uint64
	for range 10_000 {
		keys, next, err := c.Scan(t.Context(), cursor, "*", 1000).Result()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, keys...)
		if cursor = next; cursor == 0 {
			return out
		}
	}
	t.Fatal("SCAN did not finish")
	return nil
}

// runWorkers runs n workers of one split bench in goroutines, through run
// as the CLI calls it, each with its own -out, and returns their dirs and
// errors.
func runWorkers(t *testing.T, n int, args ...string) ([]string, []error, []string) {
	t.Helper()
	dirs := make([]string, n)
	errs := make([]error, n)
	logs := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		dirs[i] = t.TempDir()
		wg.Go(func() {
			var out, errOut bytes.Buffer
			a := append(slices.Clone(args), "-worker", fmt.Sprintf("%d/%d", i+1, n), "-out", dirs[i])
			errs[i] = run(t.Context(), a, &out, &errOut)
			logs[i] = out.String() + errOut.String()
		})
	}
	wg.Wait()
	return dirs, errs, logs
}

// TestWorkersSplitAndMerge runs one bench as three workers against one
// server, merges their segments, and checks the report adds them up: the
// clients split 2+2+1, ops and histogram counts the sums of the segments',
// one report naming the workers, no key left, and a missing or doubled
// segment refused by name.
func TestWorkersSplitAndMerge(t *testing.T) {
	nd := rig.Start(t)
	admin := redis.NewClient(rig.ClientOptions(nd.Addr()))
	t.Cleanup(func() { admin.Close() })
	const clients = 5
	dirs, errs, logs := runWorkers(t, 3,
		"-scenarios", "contended", "-impls", "correct,raw", "-clients", fmt.Sprint(clients), "-hold", "0",
		"-duration", "250ms", "-rounds", "1", "-addrs", nd.Addr(), "-run-id", "split-test", "-barrier-timeout", "30s")
	for i, err := range errs {
		if err != nil {
			t.Fatalf("worker %d/3: %v\n%s", i+1, err, logs[i])
		}
	}
	if left := benchKeys(t, admin); len(left) > 0 {
		t.Errorf("keys left on the server after the workers: %v", left)
	}

	segs, err := loadSegments(dirs)
	if err != nil {
		t.Fatal(err)
	}
	// Each worker's share of the 5 clients, in every run.
	for i, want := range []int{2, 2, 1} {
		if len(segs[i].Runs) != 2 {
			t.Fatalf("worker %d: %d runs; want 2 (correct, raw)", i+1, len(segs[i].Runs))
		}
		for _, r := range segs[i].Runs {
			if r.Clients != want || len(r.PerClient) != want {
				t.Errorf("worker %d run %d: %d clients (%d counts); want %d", i+1, r.Step+1, r.Clients, len(r.PerClient), want)
			}
			if r.Ops <= 0 {
				t.Errorf("worker %d run %d: %d ops; want > 0 (its clients ran)", i+1, r.Step+1, r.Ops)
			}
			// The servers' figures and the cleanup are worker 1's alone:
			// another worker's sweep could delete keys still in use.
			if lead := i == 0; lead != (len(r.Cmds) > 0) || lead != (r.ServerCPU > 0) {
				t.Errorf("worker %d run %d: server commands %v, server CPU %dns; want them from worker 1 only", i+1, r.Step+1, r.Cmds, r.ServerCPU)
			}
		}
	}
	_, _, _, _, runs, err := mergeResults(segs)
	if err != nil {
		t.Fatal(err)
	}
	opsOf := map[string]int64{}
	for i, r := range runs {
		var ops, waits int64
		for _, sg := range segs {
			ops += sg.Runs[i].Ops
			h, err := sg.Runs[i].Wait.Import()
			if err != nil {
				t.Fatal(err)
			}
			waits += h.TotalCount()
		}
		if r.Ops != ops || r.Wait.TotalCount() != waits {
			t.Errorf("run %d (%s): merged %d ops, %d waits; the segments have %d, %d", i+1, r.Spec.Impl.Name, r.Ops, r.Wait.TotalCount(), ops, waits)
		}
		if len(r.PerClient) != clients {
			t.Errorf("run %d: %d per-client counts; want the plan's %d clients", i+1, len(r.PerClient), clients)
		}
		opsOf[r.Spec.Impl.Name] = ops
	}

	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	if err := run(t.Context(), append([]string{"merge", "-out", out}, dirs...), &stdout, &stderr); err != nil {
		t.Fatalf("merge: %v\n%s", err, stderr.String())
	}
	b, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rows []speed.Row
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("summary.json: %d rows; want 2", len(rows))
	}
	for _, r := range rows {
		if r.Acquisitions != opsOf[r.Impl] || r.Acquisitions <= 0 {
			t.Errorf("%s: %d acquisitions in summary.json; the segments' sum is %d", r.Impl, r.Acquisitions, opsOf[r.Impl])
		}
		if r.Workers != 3 || r.RunID != "split-test" || r.Clients != clients || r.Violations != 0 {
			t.Errorf("%s: workers %d, run id %q, clients %d, violations %d; want 3, split-test, %d, 0", r.Impl, r.Workers, r.RunID, r.Clients, r.Violations, clients)
		}
		if r.RedisCmdsPerOp < 2 {
			t.Errorf("%s: %.2f Redis cmds/acq; want >= 2 (worker 1 measured the deployment)", r.Impl, r.RedisCmdsPerOp)
		}
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "3 workers, run id split-test") {
		t.Errorf("report.md does not say it merged 3 workers of run id split-test")
	}
	for _, f := range []string{"hgrm/contended_c5_h0_correct.hgrm", "machine.json", "plots/latency_contended_c5_h0.svg"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("merged results: %v", err)
		}
	}

	for _, tc := range []struct {
		dirs []string
		want string
	}{
		{[]string{dirs[0], dirs[2]}, "missing the segment of worker 2 of 3"},
		{[]string{dirs[0], dirs[1], dirs[1], dirs[2]}, "worker 2 of run id split-test given twice"},
		{[]string{t.TempDir()}, "segment.json"},
		{nil, "no segment directories"},
	} {
		err := run(t.Context(), append([]string{"merge", "-out", t.TempDir()}, tc.dirs...), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("merge %d dirs: error %v; want one containing %q", len(tc.dirs), err, tc.want)
		}
	}
	// A worker with another plan.
	other := *segs[1]
	other.Plan.Config.Duration *= 2
	bad := t.TempDir()
	b, _ = json.Marshal(other)
	if err := os.WriteFile(filepath.Join(bad, segmentFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	err = run(t.Context(), []string{"merge", "-out", t.TempDir(), dirs[0], bad, dirs[2]}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "the plan of worker 2") {
		t.Errorf("merge with worker 2 on a longer -duration: %v; want a plan mismatch naming worker 2", err)
	}
}

// TestWorkerBarrierTimeout: worker 1 of 2 alone fails at its first barrier
// within the bound, naming worker 2, and leaves no key behind.
func TestWorkerBarrierTimeout(t *testing.T) {
	nd := rig.Start(t)
	admin := redis.NewClient(rig.ClientOptions(nd.Addr()))
	t.Cleanup(func() { admin.Close() })
	start := time.Now()
	err := run(t.Context(), []string{"-scenarios", "contended", "-impls", "raw", "-clients", "2", "-hold", "0",
		"-duration", "200ms", "-rounds", "1", "-addrs", nd.Addr(), "-run-id", "lonely", "-barrier-timeout", "1s",
		"-worker", "1/2", "-out", t.TempDir()}, io.Discard, io.Discard)
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "worker 2 of 2 did not come within 1s") {
		t.Fatalf("worker 1/2 alone: %v; want a barrier timeout naming worker 2", err)
	}
	if took > 15*time.Second {
		t.Errorf("the timeout took %s; want about 1s (bounded)", took)
	}
	if left := benchKeys(t, admin); len(left) > 0 {
		t.Errorf("keys left after the failed worker: %v", left)
	}
}

// TestWorkerRunIDUsedTwice: a barrier key already set (a worker started
// twice, or a run id reused after a failed run) is refused by name, and
// the key, not this worker's, stays.
func TestWorkerRunIDUsedTwice(t *testing.T) {
	nd := rig.Start(t)
	admin := redis.NewClient(rig.ClientOptions(nd.Addr()))
	t.Cleanup(func() { admin.Close() })
	stale := "locklab:bench:twice:sync:0:ready:w1"
	if err := admin.Set(t.Context(), stale, "1", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	err := run(t.Context(), []string{"-scenarios", "contended", "-impls", "raw", "-clients", "2", "-hold", "0",
		"-duration", "200ms", "-rounds", "1", "-addrs", nd.Addr(), "-run-id", "twice", "-barrier-timeout", "5s",
		"-worker", "1/1", "-out", t.TempDir()}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), stale+" is already set") {
		t.Fatalf("worker 1/1 of a used run id: %v; want the stale barrier key refused", err)
	}
	if left := benchKeys(t, admin); !slices.Equal(left, []string{stale}) {
		t.Errorf("keys after the refusal: %v; want only the stale one (not this worker's to delete)", left)
	}
}

// TestWorkerFlagErrors: bad -worker, -run-id and company are refused with
// a clear error, before any server is touched.
func TestWorkerFlagErrors(t *testing.T) {
	base := []string{"-scenarios", "contended", "-addrs", "127.0.0.1:1"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-worker", "0/3", "-run-id", "x"}, "want 1 <= i <= N"},
		{[]string{"-worker", "4/3", "-run-id", "x"}, "want 1 <= i <= N"},
		{[]string{"-worker", "1/0", "-run-id", "x"}, "want 1 <= i <= N"},
		{[]string{"-worker", "two", "-run-id", "x"}, "is not i/N"},
		{[]string{"-worker", "1/3"}, "-worker needs -run-id"},
		{[]string{"-worker", "1/3", "-run-id", "a*b"}, "-run-id \"a*b\""},
		{[]string{"-worker", "1/3", "-run-id", "x", "-scenarios", "faults"}, "fault scoreboard is not split"},
		{[]string{"-worker", "1/3", "-run-id", "x", "-scenarios", "contended,faults"}, "fault scoreboard is not split"},
		{[]string{"-worker", "1/3", "-run-id", "x", "-rate", "100"}, "-worker with -rate"},
		{[]string{"-worker", "1/3", "-run-id", "x", "-check", "async"}, "-worker with -check async"},
		{[]string{"-worker", "1/3", "-run-id", "x", "-start", "tomorrow"}, "want RFC3339"},
		{[]string{"-worker", "1/3", "-run-id", "x", "-barrier-timeout", "0s"}, "-barrier-timeout must be > 0"},
		{[]string{"-run-id", "x"}, "give -worker i/N too"},
		{[]string{"-start", "2026-12-07T03:00:00Z"}, "give -worker i/N too"},
	} {
		_, err := parseFlags(append(slices.Clone(base), tc.args...), io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v; want an error containing %q", tc.args, err, tc.want)
		}
	}
	if _, err := parseFlags([]string{"-worker", "1/3", "-run-id", "x"}, io.Discard); err == nil || !strings.Contains(err.Error(), "-worker needs -addrs") {
		t.Errorf("-worker without -addrs: %v; want it refused", err)
	}
	c, err := parseFlags(append(slices.Clone(base), "-worker", "2/3", "-run-id", "r1", "-start", "2026-12-07T03:00:00Z"), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Worker != 2 || c.Workers != 3 || c.RunID != "r1" || c.Check != "sync" || c.Start.IsZero() {
		t.Errorf("-worker 2/3 -run-id r1 -start ...: worker %d/%d, run id %q, check %s, start %v", c.Worker, c.Workers, c.RunID, c.Check, c.Start)
	}
	// Locks on systems each worker would start for itself are refused.
	err = run(t.Context(), append(slices.Clone(base), "-worker", "1/2", "-run-id", "x", "-impls", "correct,etcdlock", "-out", t.TempDir()), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "etcdlock run on servers each worker would start") {
		t.Errorf("-worker with etcdlock: %v; want it refused", err)
	}
}

// TestShareSplitsClients: the workers' shares of a cell's clients add up,
// differ by at most one, and follow each other; a worker beyond the
// clients gets none.
func TestShareSplitsClients(t *testing.T) {
	for clients := 1; clients <= 12; clients++ {
		for n := 1; n <= 5; n++ {
			next, lo, hi := 0, clients, 0
			for i := 1; i <= n; i++ {
				c, first := speed.Share(clients, i, n)
				if first != next {
					t.Errorf("Share(%d, %d, %d) starts at client %d; want %d", clients, i, n, first, next)
				}
				next += c
				lo, hi = min(lo, c), max(hi, c)
			}
			if next != clients || hi-lo > 1 {
				t.Errorf("%d clients over %d workers: %d in all, shares %d..%d", clients, n, next, lo, hi)
			}
		}
	}
	if c, _ := speed.Share(1, 2, 3); c != 0 {
		t.Errorf("worker 2 of 3 of a one-client cell runs %d clients; want 0 (it idles at the barriers)", c)
	}
}
