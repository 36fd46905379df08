//go:build compose

package composetest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// composeProject lists the containers, running or not, of a Compose project.
func composeProject(t *testing.T, project string) string {
	t.Helper()
	out, err := exec.Command("docker", "ps", "-aq", "--filter", "label=com.docker.compose.project="+project).Output()
	if err != nil {
		t.Fatalf("docker ps: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// TestClusterBenchWorkersMerge runs docker/bench-cluster.sh workers 3: the
// Cluster stack up, three bench containers on its network as workers 1, 2
// and 3 of one run, their segments merged on the host. It checks, apart
// from the script's own checks, that each worker wrote its segment of the
// one run, that the merged summary.json has a row of each lock of the
// plan (w1's -impls), made of three workers, with acquisitions and no
// violation, and
// that no worker container is left, nor the cluster when it was not up
// before.
func TestClusterBenchWorkersMerge(t *testing.T) {
	clusterWasUp := composeProject(t, "locklab-cluster") != ""
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "docker", "bench-cluster.sh"), "workers", "3")
	cmd.Env = append(os.Environ(), "LOCKLAB_BENCH_RESULTS="+dir)
	// On the timeout, SIGTERM: the script takes down what it started.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = time.Minute
	out, err := cmd.CombinedOutput()
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.HasPrefix(l, "bench-cluster:") || strings.Contains(l, "docker/bench-cluster.sh") {
			t.Log(l)
		}
	}
	if err != nil {
		t.Fatalf("docker/bench-cluster.sh workers 3: %v\n%s", err, out)
	}

	runIDs := map[string]bool{}
	for i := 1; i <= 3; i++ {
		b, err := os.ReadFile(filepath.Join(dir, "w"+strconv.Itoa(i), "segment.json"))
		if err != nil {
			t.Fatalf("worker %d's segment: %v", i, err)
		}
		var seg struct {
			RunID           string `json:"run_id"`
			Worker, Workers int
		}
		if err := json.Unmarshal(b, &seg); err != nil {
			t.Fatalf("worker %d's segment: %v", i, err)
		}
		if seg.Worker != i || seg.Workers != 3 {
			t.Errorf("w%d/segment.json is worker %d of %d; want %d of 3", i, seg.Worker, seg.Workers, i)
		}
		runIDs[seg.RunID] = true
	}
	if len(runIDs) != 1 {
		t.Errorf("the segments are of run ids %v; want one run", runIDs)
	}

	b, err := os.ReadFile(filepath.Join(dir, "merged", "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		Impl       string  `json:"impl"`
		Scenario   string  `json:"scenario"`
		Clients    int     `json:"clients"`
		OpsPerSec  float64 `json:"ops_per_sec"`
		Violations int64   `json:"violations"`
		Workers    int     `json:"workers"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&rows); err != nil {
		t.Fatalf("merged summary.json: %v", err)
	}
	seen := map[string]bool{}
	for _, r := range rows {
		seen[r.Impl] = true
		t.Logf("merged: %s %s, %d clients over %d workers: %.0f ops/s, %d violations", r.Impl, r.Scenario, r.Clients, r.Workers, r.OpsPerSec, r.Violations)
		if r.Workers != 3 || r.OpsPerSec <= 0 || r.Violations != 0 {
			t.Errorf("merged row %s %s: workers %d, %.0f ops/s, %d violations; want 3 workers, acquisitions, no violation", r.Impl, r.Scenario, r.Workers, r.OpsPerSec, r.Violations)
		}
	}
	for _, impl := range strings.Split(commandFlags(t, "bench-workers.yaml w1", load(t, "bench-workers.yaml").Services["w1"].Command)["-impls"], ",") {
		if !seen[impl] {
			t.Errorf("merged summary.json has no row of %s (rows of %v)", impl, seen)
		}
	}

	if left := composeProject(t, "locklab-benchworkers"); left != "" {
		t.Errorf("worker containers left behind: %s", left)
	}
	if left := composeProject(t, "locklab-cluster"); !clusterWasUp && left != "" {
		t.Errorf("the cluster was not up before the script, and its containers are left: %s", left)
		_ = clusterScript(t, "down")
	}
}
