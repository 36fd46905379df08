package rig

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/proc"
)

const (
	// clusterMinPrimaries is the smallest cluster redis-cli --cluster
	// create accepts.
	clusterMinPrimaries = 3
	// clusterMaxPrimaries bounds what a test may ask for; more is never
	// needed on one machine.
	clusterMaxPrimaries = 16
	// clusterReadyTimeout bounds the whole start: nodes, redis-cli and the
	// wait for cluster_state:ok on every node.
	clusterReadyTimeout = 30 * time.Second
	// clusterPoll is the polling interval of the readiness check.
	clusterPoll = 20 * time.Millisecond
	// clusterSlots is the number of hash slots of Redis Cluster.
	clusterSlots = 16384
)

// Cluster is a Redis Cluster of redis-server processes (cluster-enabled
// yes): primaries sharing every slot and, with [WithReplicas], replicas
// following each primary. Its methods are safe for concurrent use.
//
// A fresh cluster node reports cluster_state:ok only about 2s after it
// started (Redis's CLUSTER_WRITABLE_DELAY), so a start takes a little over
// 2s; tests that use a cluster should call t.Parallel after [StartCluster]
// to overlap that with other tests.
type Cluster struct {
	nodes     []*Node // the primaries, then each primary's replicas in turn
	bus       []int   // each node's cluster bus port
	primaries int
	replicas  int       // per primary
	clients   clientSet // made by Client, closed by Close
}

// StartCluster starts a cluster of primaries nodes for a test, as
// [NewCluster] does, and closes it in tb.Cleanup. It skips the test, with
// the reason, when the provider cannot start redis-server processes with
// custom arguments (external servers, Docker), and fails it on any other
// error. When the test fails, the tail of each node's log is logged.
func StartCluster(tb testing.TB, primaries int, opts ...ClusterOption) *Cluster {
	tb.Helper()
	RequireControl(tb)
	if p, err := chooseProvider(); err == nil {
		if _, ok := p.(execProvider); !ok {
			tb.Skipf("a Redis Cluster needs redis-server processes on this machine; provider %s cannot start one", p.name())
		}
	}
	c, err := NewCluster(context.Background(), primaries, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		for _, nd := range c.nodes {
			logTailIfFailed(tb, "cluster node", nd)
		}
		_ = c.Close()
	})
	return c
}

// NewCluster starts primaries redis-server nodes with cluster mode on, joins
// them with "redis-cli --cluster create ... --cluster-replicas 0", attaches
// the replicas [WithReplicas] asks for (CLUSTER MEET, then CLUSTER
// REPLICATE: replica r of primary i follows primary i), and returns once
// every node reports cluster_state:ok, knows every other node and sees all
// 16384 slots served, and every replica's link to its primary is up.
// primaries must be between 3 (the least redis-cli accepts) and 16. The
// caller must Close the cluster.
//
// Each node runs as [New] starts a node (its own directory, log and free
// loopback port), with its cluster bus on a second free port
// (--cluster-port), so that a port above 55535 works too. redis-cli is
// looked up next to the redis-server binary, then on PATH.
func NewCluster(ctx context.Context, primaries int, opts ...ClusterOption) (*Cluster, error) {
	if primaries < clusterMinPrimaries || primaries > clusterMaxPrimaries {
		return nil, fmt.Errorf("rig: cluster: %d primaries; want %d to %d", primaries, clusterMinPrimaries, clusterMaxPrimaries)
	}
	cc, err := newClusterConfig(opts)
	if err != nil {
		return nil, err
	}
	p, err := chooseProvider()
	if err != nil {
		return nil, err
	}
	ep, ok := p.(execProvider)
	if !ok {
		return nil, fmt.Errorf("rig: cluster needs redis-server processes; provider %s: %w", p.name(), ErrNoControl)
	}
	cli, err := redisCLI(ep.bin)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, clusterReadyTimeout)
	defer cancel()

	total := primaries * (1 + cc.replicas)
	c := &Cluster{nodes: make([]*Node, total), bus: make([]int, total), primaries: primaries, replicas: cc.replicas}
	errs := make([]error, total)
	var wg sync.WaitGroup
	for i := range total {
		wg.Go(func() { c.nodes[i], c.bus[i], errs[i] = startClusterNode(ctx, ep, i) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		_ = c.Close()
		return nil, err
	}
	if err := c.create(ctx, cli); err != nil {
		_ = c.Close()
		return nil, err
	}
	if err := c.attachReplicas(ctx); err != nil {
		_ = c.Close()
		return nil, err
	}
	if err := c.waitReady(ctx); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// startClusterNode starts one cluster node. Its bus port is chosen here;
// if it was taken meanwhile the server exits with "Address already in
// use", and another bus port is tried.
func startClusterNode(ctx context.Context, p execProvider, i int) (*Node, int, error) {
	var nd *Node
	var bus int
	err := onFreePort(addrInUse, func() error {
		var err error
		if bus, err = freePort(); err != nil {
			return err
		}
		cfg := newConfig([]Option{WithArgs(
			"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf", // in the node's own directory
			"--cluster-port", strconv.Itoa(bus),
		)})
		nd, err = p.start(ctx, cfg, i)
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	return nd, bus, nil
}

// redisCLI finds redis-cli: beside the server binary (a build of its own
// named by LOCKLAB_REDIS_SERVER comes with its own redis-cli), then on PATH.
// For valkey-server, it is valkey-cli.
func redisCLI(serverBin string) (string, error) {
	name := "redis-cli"
	if strings.HasPrefix(filepath.Base(serverBin), "valkey") {
		name = "valkey-cli"
	}
	beside := filepath.Join(filepath.Dir(serverBin), name)
	if fi, err := os.Stat(beside); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
		return beside, nil
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("rig: cluster: %s not found beside %s or on PATH (it comes with the server: apt-get install redis-tools or valkey-tools, brew install redis or valkey)", name, serverBin)
}

// create runs redis-cli --cluster create over the primaries and checks it
// reported every slot covered.
func (c *Cluster) create(ctx context.Context, cli string) error {
	args := []string{"--cluster", "create"}
	args = append(args, c.Addrs()[:c.primaries]...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	var out bytes.Buffer
	cmd := exec.Command(cli, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := proc.Start(cmd); err != nil {
		return fmt.Errorf("rig: cluster: start redis-cli: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = proc.Signal(cmd, syscall.SIGKILL)
		<-done
		err = ctx.Err()
	}
	if err != nil || !strings.Contains(out.String(), "All 16384 slots covered") {
		return fmt.Errorf("rig: cluster: redis-cli --cluster create: %v; output:\n%s", err, strings.TrimSpace(out.String()))
	}
	return nil
}

// waitReady polls CLUSTER INFO on every node until each reports
// cluster_state:ok, all slots ok and every node known, and each replica's
// INFO replication until its link to its primary is up.
func (c *Cluster) waitReady(ctx context.Context) error {
	probes := make([]*redis.Client, len(c.nodes))
	for i, nd := range c.nodes {
		probes[i] = redis.NewClient(probeOptions(nd.Addr(), time.Second))
	}
	defer func() {
		for _, p := range probes {
			_ = p.Close()
		}
	}()
	want := map[string]string{
		"cluster_state":          "ok",
		"cluster_slots_ok":       strconv.Itoa(clusterSlots),
		"cluster_known_nodes":    strconv.Itoa(len(c.nodes)),
		"cluster_size":           strconv.Itoa(c.primaries),
		"cluster_slots_assigned": strconv.Itoa(clusterSlots),
	}
	var last string
	for {
		ready := true
		for i, p := range probes {
			info, err := p.ClusterInfo(ctx).Result()
			if err != nil {
				ready, last = false, fmt.Sprintf("%s: %v", c.nodes[i].Addr(), err)
				break
			}
			if bad := clusterInfoMismatch(info, want); bad != "" {
				ready, last = false, fmt.Sprintf("%s: %s", c.nodes[i].Addr(), bad)
				break
			}
			if bad := c.shardsMismatch(ctx, p); bad != "" {
				ready, last = false, fmt.Sprintf("%s: %s", c.nodes[i].Addr(), bad)
				break
			}
			if i >= c.primaries {
				if bad := replicaLinkDown(ctx, p); bad != "" {
					ready, last = false, fmt.Sprintf("replica %s: %s", c.nodes[i].Addr(), bad)
					break
				}
			}
		}
		if ready {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("rig: cluster not ready: %w; last: %s", ctx.Err(), last)
		case <-time.After(clusterPoll):
		}
	}
}

// clusterInfoMismatch returns the first field of CLUSTER INFO that differs
// from want, as "field=got (want x)", or "" when all match.
func clusterInfoMismatch(info string, want map[string]string) string {
	got := map[string]string{}
	for _, l := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(l), ":"); ok {
			got[k] = v
		}
	}
	for _, k := range []string{"cluster_state", "cluster_slots_assigned", "cluster_slots_ok", "cluster_known_nodes", "cluster_size"} {
		if got[k] != want[k] {
			return fmt.Sprintf("%s=%q (want %s)", k, got[k], want[k])
		}
	}
	return ""
}

// Addrs returns the nodes' "127.0.0.1:port" addresses, in start order:
// the primaries, then the replicas (see [Cluster.Nodes]).
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.nodes))
	for i, nd := range c.nodes {
		if nd != nil {
			out[i] = nd.Addr()
		}
	}
	return out
}

// Nodes returns the cluster's nodes, for faults (Kill, Pause) and logs:
// the primaries, then replica r of primary i at index primaries +
// i*replicas + r (see [Cluster.Primaries], [Cluster.ReplicasOf]). A node's
// own [Node.Client] talks to that node only and gets MOVED for keys of
// other nodes' slots.
func (c *Cluster) Nodes() []*Node { return append([]*Node(nil), c.nodes...) }

// Client returns a new *redis.ClusterClient seeded with every node, closed
// by [Cluster.Close]. Like [Node.Client] it does not retry commands by
// itself (MaxRetries -1) and honours context deadlines; it follows up to 3
// MOVED/ASK redirects (go-redis's default). opts, when given, adjust the
// options before the client is made.
func (c *Cluster) Client(opts ...func(*redis.ClusterOptions)) *redis.ClusterClient {
	o := clientDefaults(c.Addrs()...).Cluster()
	for _, f := range opts {
		f(o)
	}
	cc := redis.NewClusterClient(o)
	c.clients.add(cc)
	return cc
}

// Close closes the clients made by [Cluster.Client], then every node (see
// [Node.Close]). It is safe to call more than once.
func (c *Cluster) Close() error {
	if !c.clients.close() {
		return nil
	}
	errs := make([]error, len(c.nodes))
	var wg sync.WaitGroup
	for i, nd := range c.nodes {
		if nd != nil {
			wg.Go(func() { errs[i] = nd.Close() })
		}
	}
	wg.Wait()
	return errors.Join(errs...)
}
