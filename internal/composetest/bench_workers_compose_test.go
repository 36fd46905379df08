package composetest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// commandFlags parses a bench command line of -name value pairs (and
// -name=value) into a map, failing the test on anything else.
func commandFlags(t *testing.T, where string, cmd []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for i := 0; i < len(cmd); i++ {
		a := cmd[i]
		if !strings.HasPrefix(a, "-") {
			t.Errorf("%s: command %q: %q is not a flag", where, cmd, a)
			continue
		}
		name, value, ok := strings.Cut(a, "=")
		if !ok {
			if i+1 >= len(cmd) {
				t.Errorf("%s: command %q: %s has no value", where, cmd, a)
				break
			}
			i++
			value = cmd[i]
		}
		if _, dup := out[name]; dup {
			t.Errorf("%s: command %q gives %s twice", where, cmd, name)
		}
		out[name] = value
	}
	return out
}

// TestBenchWorkersSplitOnePlanOnTheClusterNetwork checks
// compose/bench-workers.yaml: services w1..wN of the bench image, each
// worker i of N (N defaulting to the number of services) of one run (the
// same -run-id and -start variables), writing its own segment under the
// one bind-mounted /out, running the same plan otherwise (the ratio of
// one worker to N compares like with like), seeded with the Cluster
// stack's nodes by service name and port, on that stack's network. The
// scripts that run and clean up the workers name the file's project.
func TestBenchWorkersSplitOnePlanOnTheClusterNetwork(t *testing.T) {
	f := load(t, "bench-workers.yaml")
	names := serviceNames(f)
	n := len(names)
	if n < 2 {
		t.Fatalf("bench-workers.yaml has %d services %q; want workers w1..wN, N >= 2", n, names)
	}
	for i := 1; i <= n; i++ {
		if _, ok := f.Services["w"+strconv.Itoa(i)]; !ok {
			t.Fatalf("bench-workers.yaml services %q; want w1..w%d (docker/bench-cluster.sh starts w1..wN)", names, n)
		}
	}

	// The seeds: cluster.yaml's nodes, by service name, on their ports.
	c := load(t, "cluster.yaml")
	ports := clusterPorts(t)
	var seeds []string
	for i, name := range serviceNames(c) {
		seeds = append(seeds, fmt.Sprintf("%s:%d", name, ports[i]))
	}
	wantAddrs := "cluster://" + strings.Join(seeds, ",")

	var first map[string]string
	for i := 1; i <= n; i++ {
		name := "w" + strconv.Itoa(i)
		s := f.Services[name]
		where := "bench-workers.yaml " + name
		if s.Image != "${LOCKLAB_BENCH_IMAGE:-locklab/bench:local}" {
			t.Errorf("%s: image %q; want ${LOCKLAB_BENCH_IMAGE:-locklab/bench:local} (docker/build.sh bench)", where, s.Image)
		}
		if len(s.Ports) > 0 || s.NetworkMode != "" {
			t.Errorf("%s: ports %q, network_mode %q; a worker publishes nothing and joins the cluster's network", where, s.Ports, s.NetworkMode)
		}
		if s.Restart != "no" {
			t.Errorf("%s: restart %q; want \"no\" (a worker runs once)", where, s.Restart)
		}
		if s.User == "" {
			t.Errorf("%s: no user; want the caller's (LOCKLAB_BENCH_USER), so that the results belong to them", where)
		}
		if len(s.Volumes) != 1 || !strings.HasSuffix(s.Volumes[0], ":/out") || !strings.HasPrefix(s.Volumes[0], "${LOCKLAB_BENCH_OUT:?") {
			t.Errorf("%s: volumes %q; want one, ${LOCKLAB_BENCH_OUT:?...}:/out", where, s.Volumes)
		}
		fl := commandFlags(t, where, s.Command)
		for flag, want := range map[string]string{
			"-worker": fmt.Sprintf("%d/${LOCKLAB_BENCH_WORKERS:-%d}", i, n),
			"-out":    "/out/" + name,
			"-addrs":  wantAddrs,
		} {
			if fl[flag] != want {
				t.Errorf("%s: %s %q; want %q", where, flag, fl[flag], want)
			}
		}
		for flag, v := range map[string]string{"-run-id": "${LOCKLAB_BENCH_RUN:?", "-start": "${LOCKLAB_BENCH_START:?"} {
			if !strings.HasPrefix(fl[flag], v) {
				t.Errorf("%s: %s %q; want the run's variable, %s...}", where, flag, fl[flag], v)
			}
		}
		if i == 1 {
			first = fl
			continue
		}
		for flag, v := range first {
			if flag != "-worker" && flag != "-out" && fl[flag] != v {
				t.Errorf("%s: %s %q; w1 has %q: the workers run one plan", where, flag, fl[flag], v)
			}
		}
		for flag := range fl {
			if _, ok := first[flag]; !ok {
				t.Errorf("%s: %s, which w1 does not have: the workers run one plan", where, flag)
			}
		}
	}

	// The cluster's network: Compose's default network of the project
	// docker/compose.sh names locklab-cluster.
	if nw := f.Networks["default"]; !nw.External || nw.Name != "locklab-cluster_default" || len(f.Networks) != 1 {
		t.Errorf("bench-workers.yaml networks %+v; want only default, external, named locklab-cluster_default", f.Networks)
	}
	for _, file := range []string{"bench-cluster.sh", "ci.sh"} {
		b, err := os.ReadFile(filepath.Join(root, "docker", file))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "locklab-benchworkers") {
			t.Errorf("docker/%s does not name the workers' project locklab-benchworkers (it runs them, or checks none is left)", file)
		}
	}
	b, err := os.ReadFile(filepath.Join(root, "docker", "build.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "BENCH_IMAGE=${BENCH_IMAGE:-locklab/bench:local}") {
		t.Error("docker/build.sh does not build locklab/bench:local, the workers' image")
	}
}
