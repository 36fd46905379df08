package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/bench/env"
	"github.com/locklab/locklab/bench/registry"
	"github.com/locklab/locklab/internal/measure"
	"github.com/locklab/locklab/internal/rig"
)

// deployImpls are the locks the deployment tests run (with -client
// plain,autopipe, each also on a ClusterClient's AutoPipeliner, a
// FailoverClient's on Sentinel): correct-poll, fencing (its hash-tagged
// counter) and the floor; and on Sentinel rueidislock (rueidis finding the
// primary through the sentinels; on a cluster it is left out, see its
// NoCluster).
const deployImpls = "correct-poll,fencing,raw"

// runDeployed runs the bench as `go run ./bench -addrs <addrs> -quick`
// would, tiny, on deployImpls, and checks what any deployment must show:
// rows for every lock in every cell but rtt (left out), a lock's commands
// counted (raw sends SET and EVALSHA per acquisition: 2 a op), server CPU,
// no violation, no leftover key. It returns the results directory.
func runDeployed(t *testing.T, addrs, impls string) string {
	t.Helper()
	dir, _, stderr := runBench(t, "-addrs", addrs, "-quick", "-impls", impls, "-client", "plain,autopipe",
		"-clients", "4", "-keys-clients", "4", "-hold", "0", "-duration", "200ms", "-plots=false")
	if !strings.Contains(stderr, "the rtt scenario is left out") {
		t.Errorf("stderr does not say the rtt scenario is left out:\n%s", stderr)
	}
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var n []json.RawMessage
	if err := json.Unmarshal(b, &n); err != nil {
		t.Fatal(err)
	}
	rows := checkSchema(t, b, len(n))
	seen := map[string]bool{}
	for _, r := range rows {
		impl := r["impl"].(string)
		if c, _ := r["client"].(string); c != "" && !strings.HasSuffix(impl, registry.PipelinedSuffix) {
			impl += registry.PipelinedSuffix // a row on AutoPipeliners: impl raw, client autopipe
		}
		name := impl + " " + r["scenario"].(string)
		seen[impl], seen[r["scenario"].(string)] = true, true
		if r["ops_per_sec"].(float64) <= 0 || r["violations"] != 0.0 || r["leftover_keys"] != 0.0 {
			t.Errorf("%s: ops/s %v, violations %v, leftover keys %v; want > 0, 0, 0", name, r["ops_per_sec"], r["violations"], r["leftover_keys"])
		}
		if cpu := r["server_cpu_us_per_op"].(float64); cpu <= 0 {
			t.Errorf("%s: server_cpu_us_per_op %v; want > 0", name, cpu)
		}
		want := 1.0
		if strings.HasPrefix(name, "raw") {
			want = 2 // SET and EVALSHA, on whichever primary serves the key
		}
		if c := r["redis_cmds_per_op"].(float64); c < want {
			t.Errorf("%s: redis_cmds_per_op %.2f; want >= %v (commands on every primary counted)", name, c, want)
		}
	}
	for _, want := range append(strings.Split(impls, ","), "raw@autopipe", "fencing@autopipe", "uncontended", "contended", "keys") {
		if !seen[want] {
			t.Errorf("no row of %s in the summary (%d rows)", want, len(rows))
		}
	}
	if seen[scRTT] {
		t.Errorf("the summary has rows of the rtt scenario, which was to be left out")
	}
	return dir
}

// noBenchKeys fails t if a server at addr holds a key of the bench.
func noBenchKeys(t *testing.T, addr string) {
	t.Helper()
	c := redis.NewClient(rig.ClientOptions(addr))
	defer c.Close()
	keys, _, err := c.Scan(t.Context(), 0, "*"+env.KeyRoot+"*", 100_000).Result() // fencing: {key}:...
	if err != nil {
		t.Fatalf("SCAN on %s: %v", addr, err)
	}
	if len(keys) > 0 {
		t.Errorf("%s holds %d keys of the bench after the run, such as %q", addr, len(keys), keys[0])
	}
}

// setCalls returns cmdstat_set's calls on the server at addr.
func setCalls(t *testing.T, addr string) int64 {
	t.Helper()
	c := redis.NewClient(rig.ClientOptions(addr))
	defer c.Close()
	info, err := c.Info(t.Context(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	cs, err := measure.ParseCommandstats(info)
	if err != nil {
		t.Fatal(err)
	}
	return cs["set"]
}

// TestClusterAddrs runs the bench on a rig Redis Cluster of 3 primaries
// through -addrs cluster://: the locks' keys spread over the primaries
// (each saw SETs), the figures count all of them, and no primary keeps
// a key.
func TestClusterAddrs(t *testing.T) {
	cl := rig.StartCluster(t, 3)
	primaries := []string{}
	for _, nd := range cl.Primaries() {
		primaries = append(primaries, nd.Addr())
	}
	before := map[string]int64{}
	for _, a := range primaries {
		before[a] = setCalls(t, a)
	}
	dir := runDeployed(t, "cluster://"+strings.Join(cl.Addrs()[:2], ","), deployImpls)
	for _, a := range primaries {
		if n := setCalls(t, a) - before[a]; n < 10 {
			t.Errorf("primary %s saw %d SETs during the run; want the locks' keys on every primary", a, n)
		}
		noBenchKeys(t, a)
	}
	var mach struct {
		Servers string `json:"servers"`
	}
	b, _ := os.ReadFile(filepath.Join(dir, "machine.json"))
	if err := json.Unmarshal(b, &mach); err != nil || !strings.Contains(mach.Servers, "Redis Cluster") || !strings.Contains(mach.Servers, "3 primaries") {
		t.Errorf("machine.json servers = %q (%v); want the Redis Cluster and its 3 primaries", mach.Servers, err)
	}
}

// TestSentinelAddrs runs the bench on a rig Sentinel group (a primary, a
// replica, 3 sentinels) through -addrs sentinel://: the locks reach the
// primary through the sentinels, and it keeps no key.
func TestSentinelAddrs(t *testing.T) {
	rig.RequireControl(t)
	nodes, err := rig.NewN(t.Context(), 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, nd := range nodes {
			_ = nd.Close()
		}
	})
	primary := nodes[0]
	if err := nodes[1].ReplicaOf(t.Context(), primary.Addr()); err != nil {
		t.Fatal(err)
	}
	sn := rig.StartSentinels(t, primary, 3)
	dir := runDeployed(t, "sentinel://"+sn.MasterName()+"@"+strings.Join(sn.Addrs(), ","), deployImpls+",rueidislock")
	noBenchKeys(t, primary.Addr())
	var mach struct {
		Servers string `json:"servers"`
	}
	b, _ := os.ReadFile(filepath.Join(dir, "machine.json"))
	if err := json.Unmarshal(b, &mach); err != nil || !strings.Contains(mach.Servers, "Sentinel group") || !strings.Contains(mach.Servers, primary.Addr()) {
		t.Errorf("machine.json servers = %q (%v); want the Sentinel group and its primary %s", mach.Servers, err, primary.Addr())
	}
}

// TestParseAddrs: -addrs' three forms parse into servers or a deployment.
func TestParseAddrs(t *testing.T) {
	tests := []struct {
		in        string
		addrs     []string
		cluster   []string
		master    string
		sentinels []string
	}{
		{"", nil, nil, "", nil},
		{"127.0.0.1:7000,127.0.0.1:7001", []string{"127.0.0.1:7000", "127.0.0.1:7001"}, nil, "", nil},
		{"cluster://10.0.0.1:7000, 10.0.0.2:7000", nil, []string{"10.0.0.1:7000", "10.0.0.2:7000"}, "", nil},
		{"sentinel://mymaster@10.0.0.1:26379,10.0.0.2:26379", nil, nil, "mymaster", []string{"10.0.0.1:26379", "10.0.0.2:26379"}},
	}
	for _, tt := range tests {
		c, err := parseFlags([]string{"-addrs", tt.in}, io.Discard)
		if err != nil {
			t.Errorf("parseFlags(-addrs %q): %v", tt.in, err)
			continue
		}
		var master string
		var sentinels []string
		if s := c.Deploy.Sentinel; s != nil {
			master, sentinels = s.Master, s.Addrs
		}
		if !slices.Equal(c.Addrs, tt.addrs) || !slices.Equal(c.Deploy.Cluster, tt.cluster) || master != tt.master || !slices.Equal(sentinels, tt.sentinels) {
			t.Errorf("-addrs %q = servers %q, cluster %q, sentinel %q@%q; want %q, %q, %q@%q",
				tt.in, c.Addrs, c.Deploy.Cluster, master, sentinels, tt.addrs, tt.cluster, tt.master, tt.sentinels)
		}
	}
}

// TestBadAddrs: every malformed -addrs, and every selection a cluster or
// Sentinel group cannot run, is a clear error before any server is dialled.
func TestBadAddrs(t *testing.T) {
	const cluster = "cluster://127.0.0.1:1"
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-addrs", "redis://127.0.0.1:1"}, `unknown scheme "redis://"`},
		{[]string{"-addrs", "cluster://"}, "no seed node"},
		{[]string{"-addrs", "cluster://,"}, "empty entry"},
		{[]string{"-addrs", "cluster://127.0.0.1"}, `"127.0.0.1" is not host:port`},
		{[]string{"-addrs", "sentinel://127.0.0.1:26379"}, "no master name"},
		{[]string{"-addrs", "sentinel://@127.0.0.1:26379"}, "no master name"},
		{[]string{"-addrs", "sentinel://mymaster@"}, "no sentinel"},
		{[]string{"-addrs", "localhost"}, `"localhost" is not host:port`},
		{[]string{"-addrs", cluster, "-server", "redis,valkey"}, "with -addrs the servers are given"},
		{[]string{"-addrs", cluster, "-scenarios", "rtt"}, "-scenarios rtt: its latency proxies sit in front of standalone servers"},
		{[]string{"-addrs", cluster, "-scenarios", "faults"}, "the fault scoreboard needs independent standalone servers"},
		{[]string{"-addrs", cluster, "-impls", "redlock-5"}, "redlock-5 needs 5 independent servers: a Redis Cluster is one deployment, not N independent servers"},
		{[]string{"-addrs", "sentinel://m@127.0.0.1:1", "-impls", "correct,redsync-5"}, "redsync-5 needs 5 independent servers: a Sentinel group is one primary"},
		{[]string{"-addrs", cluster, "-impls", "raw-5*"}, "no selected lock runs on cluster://127.0.0.1:1"},
		{[]string{"-addrs", cluster, "-impls", "correct+keep"}, "correct+keep cannot run on a Redis Cluster: its Notifier refuses a Redis Cluster"},
		{[]string{"-addrs", cluster, "-impls", "rueidislock"}, "rueidislock cannot run on a Redis Cluster"},
	}
	for _, tt := range tests {
		err := run(t.Context(), append(tt.args, "-out", t.TempDir()), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("run(%q) = %v; want an error containing %q", tt.args, err, tt.want)
		}
	}
}

// TestDeployedDefaultSelection: on a cluster the default selection (and a
// glob) leaves the locks on 5 servers out, saying which and why, and keeps
// every single-server lock.
func TestDeployedDefaultSelection(t *testing.T) {
	cfg, err := parseFlags([]string{"-addrs", "cluster://127.0.0.1:1"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	all, err := registry.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	got, err := fitImpls(all, cfg, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	for _, im := range all {
		kept, want := slices.Contains(got, im), im.Nodes == 1 && im.NoCluster == ""
		if kept != want {
			t.Errorf("%s (%d nodes): kept = %v; want %v", im.Name, im.Nodes, kept, want)
		}
		if !want && !strings.Contains(stderr.String(), im.Name) {
			t.Errorf("stderr does not name %s as left out: %q", im.Name, stderr.String())
		}
	}
	if !strings.Contains(stderr.String(), "a Redis Cluster is one deployment, not N independent servers") {
		t.Errorf("stderr = %q; want the reason", stderr.String())
	}
}
