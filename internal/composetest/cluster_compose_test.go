package composetest_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// clusterPorts returns the host ports of compose/cluster.yaml's nodes, in
// service order, checking each node's shape on the way: the image every
// stack names, cluster mode on, no data on disk, protected mode off (its
// clients come through Docker's port forwarding), the one port it listens
// on inside its container published on the host's loopback as itself, and
// a health check on that port.
func clusterPorts(t *testing.T) []int {
	t.Helper()
	f := load(t, "cluster.yaml")
	names := serviceNames(f)
	if len(names) != 6 {
		t.Fatalf("cluster.yaml has %d services %q; want 6 nodes (three primaries, a replica each)", len(names), names)
	}
	var ports []int
	for _, name := range names {
		s := f.Services[name]
		where := "cluster.yaml " + name
		checkImage(t, where, s.Image)
		cmd := strings.Join(s.Command, " ")
		for _, want := range []string{"redis-server", "--cluster-enabled yes", "--save  ", "--appendonly no", "--protected-mode no"} {
			if !strings.Contains(cmd+" ", want) {
				t.Errorf("%s: command %q lacks %q", where, s.Command, want)
			}
		}
		if s.NetworkMode != "" {
			t.Errorf("%s: network_mode %q; want the stack's own network (Compose's default)", where, s.NetworkMode)
		}
		p := flagPort(t, where, s.Command)
		spec := "127.0.0.1:" + strconv.Itoa(p) + ":" + strconv.Itoa(p)
		if !slices.Equal(s.Ports, []string{spec}) {
			t.Errorf("%s: ports %q; want [%q]: its own port, on the loopback, as itself (so a client on the host maps a node's address by port alone)", where, s.Ports, spec)
		}
		if hc := strings.Join(s.Healthcheck.Test, " "); !strings.Contains(hc, "-p "+strconv.Itoa(p)+" ping") {
			t.Errorf("%s: health check %q; want a PING on port %d", where, s.Healthcheck.Test, p)
		}
		ports = append(ports, p)
	}
	return ports
}

// TestClusterComposeIsSixLoopbackNodes checks compose/cluster.yaml's
// nodes, that their ports clash with no other stack's (all may run at
// once), and that docker/cluster.sh forms the cluster over exactly those
// ports and compose/README.md names the script.
func TestClusterComposeIsSixLoopbackNodes(t *testing.T) {
	ports := clusterPorts(t)
	var all []hostPort
	for i, p := range ports {
		all = append(all, hostPort{"cluster.yaml", "node-" + strconv.Itoa(i+1), p})
	}
	r := load(t, "redlock.yaml")
	for _, name := range serviceNames(r) {
		for _, p := range r.Services[name].Ports {
			all = append(all, hostPort{"redlock.yaml", name, publishedPort(t, name, p)})
		}
	}
	s := load(t, "sentinel.yaml")
	for _, name := range serviceNames(s) {
		all = append(all, hostPort{"sentinel.yaml", name, flagPort(t, name, s.Services[name].Command)})
	}
	checkPorts(t, all)
	for _, p := range ports {
		// The cluster bus listens on port+10000, inside the network only.
		if bus := p + 10000; slices.ContainsFunc(all, func(hp hostPort) bool { return hp.port == bus }) {
			t.Errorf("cluster bus port %d (node port %d + 10000) is a host port of another stack", bus, p)
		}
	}

	script, err := os.ReadFile(filepath.Join(root, "docker", "cluster.sh"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^ports=\(([0-9 ]+)\)$`).FindSubmatch(script)
	if m == nil {
		t.Fatal("docker/cluster.sh has no ports=(...) line")
	}
	var scripted []int
	for _, f := range strings.Fields(string(m[1])) {
		p, _ := strconv.Atoi(f)
		scripted = append(scripted, p)
	}
	if !slices.Equal(scripted, ports) {
		t.Errorf("docker/cluster.sh ports %v; want compose/cluster.yaml's %v", scripted, ports)
	}
	readme, err := os.ReadFile(composePath("README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"docker/cluster.sh up", "docker/cluster.sh down", "locklab-cluster_default"} {
		if !strings.Contains(string(readme), want) {
			t.Errorf("compose/README.md does not name %q", want)
		}
	}
}
