package rig_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/proc"
	"github.com/locklab/locklab/internal/rig"
)

func TestClusterServesEverySlotFromEveryPrimary(t *testing.T) {
	c := rig.StartCluster(t, 3)
	t.Parallel() // the rest of the package runs while nothing else waits
	ctx := ctxFor(t)

	addrs := c.Addrs()
	if len(addrs) != 3 {
		t.Fatalf("Addrs() = %q; want 3 addresses", addrs)
	}
	seen := map[string]bool{}
	for _, a := range addrs {
		if seen[a] || a == "127.0.0.1:6379" || !strings.HasPrefix(a, "127.0.0.1:") {
			t.Fatalf("Addrs() = %q; want distinct loopback addresses, never 6379", addrs)
		}
		seen[a] = true
	}

	// Every node is a primary owning a share of the slots.
	cc := c.Client()
	shards, err := cc.ClusterShards(ctx).Result()
	if err != nil {
		t.Fatalf("CLUSTER SHARDS = %v", err)
	}
	if len(shards) != 3 {
		t.Fatalf("CLUSTER SHARDS lists %d shards; want 3", len(shards))
	}
	slots := 0
	for _, s := range shards {
		for _, r := range s.Slots {
			slots += int(r.End-r.Start) + 1
		}
		if len(s.Nodes) != 1 || s.Nodes[0].Role != "master" {
			t.Errorf("shard nodes = %+v; want one primary", s.Nodes)
		}
	}
	if slots != 16384 {
		t.Errorf("slots served = %d; want 16384", slots)
	}

	// Keys spread over the slots land on every primary, and the client
	// follows the slot map to read them back.
	const n = 60
	for i := range n {
		if err := cc.Set(ctx, fmt.Sprintf("spread:%d", i), i, 0).Err(); err != nil {
			t.Fatalf("SET spread:%d through the cluster client = %v", i, err)
		}
	}
	for i := range n {
		if got, err := cc.Get(ctx, fmt.Sprintf("spread:%d", i)).Int(); err != nil || got != i {
			t.Fatalf("GET spread:%d = %d, %v; want %d", i, got, err, i)
		}
	}
	total := int64(0)
	for _, nd := range c.Nodes() {
		size, err := nd.Client().DBSize(ctx).Result()
		if err != nil {
			t.Fatalf("DBSIZE on %s = %v", nd.Addr(), err)
		}
		if size == 0 {
			t.Errorf("node %s holds no key of %d spread ones; want keys on every primary", nd.Addr(), n)
		}
		total += size
	}
	if total != n {
		t.Errorf("keys over all nodes = %d; want %d", total, n)
	}

	// The server enforces slots: a script over two slots is refused, one
	// over keys sharing a hash tag runs.
	err = cc.Eval(ctx, "return 1", []string{"orders", "orders:q"}).Err()
	if err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Errorf("EVAL over two slots = %v; want CROSSSLOT", err)
	}
	if err := cc.Eval(ctx, "return 1", []string{"{orders}", "{orders}:q"}).Err(); err != nil {
		t.Errorf("EVAL over one hash tag = %v; want 1", err)
	}

	// Close stops every server and client.
	pids := make([]int, 0, 3)
	for _, nd := range c.Nodes() {
		pids = append(pids, nd.Pid())
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	for _, pid := range pids {
		if st := proc.State(pid); st != "" && st != "Z" {
			t.Errorf("redis-server pid %d in state %q after Close; want gone", pid, st)
		}
	}
	if err := cc.Ping(context.Background()).Err(); err == nil {
		t.Error("PING through the cluster client after Close succeeded; want an error")
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close() = %v; want nil", err)
	}
}

func TestNewClusterRejectsBadSizes(t *testing.T) {
	for _, n := range []int{-1, 0, 1, 2, 17} {
		c, err := rig.NewCluster(context.Background(), n)
		if err == nil {
			_ = c.Close()
			t.Errorf("NewCluster(%d) = nil error; want one", n)
			continue
		}
		if !strings.Contains(err.Error(), "primaries") {
			t.Errorf("NewCluster(%d) = %q; want it to name the primaries", n, err)
		}
	}
}

func TestClusterWithReplicasFollowsAndFailsOver(t *testing.T) {
	c := rig.StartCluster(t, 3, rig.WithReplicas(1))
	t.Parallel()
	ctx := ctxFor(t)

	if got := len(c.Nodes()); got != 6 {
		t.Fatalf("len(Nodes()) = %d; want 6 (3 primaries, a replica each)", got)
	}
	// Every node is a rig process, which make strays would find orphaned.
	strays, err := rig.Strays()
	if err != nil {
		t.Fatal(err)
	}
	for _, nd := range c.Nodes() {
		if !slices.Contains(strays, nd.Pid()) {
			t.Errorf("node %s (pid %d) is not among rig.Strays() %v; want every cluster node marked", nd.Addr(), nd.Pid(), strays)
		}
	}

	// Each shard is one primary and the replica started to follow it.
	cc := c.Client()
	shards, err := cc.ClusterShards(ctx).Result()
	if err != nil {
		t.Fatalf("CLUSTER SHARDS = %v", err)
	}
	if len(shards) != 3 {
		t.Fatalf("CLUSTER SHARDS lists %d shards; want 3", len(shards))
	}
	followed := map[string]string{} // replica port -> primary port
	for _, s := range shards {
		var primary, replica string
		for _, n := range s.Nodes {
			switch n.Role {
			case "master":
				primary = fmt.Sprint(n.Port)
			case "replica":
				replica = fmt.Sprint(n.Port)
			}
		}
		if primary == "" || replica == "" || len(s.Nodes) != 2 {
			t.Fatalf("shard nodes = %+v; want one primary and one replica", s.Nodes)
		}
		followed[replica] = primary
	}
	for i, p := range c.Primaries() {
		rs := c.ReplicasOf(i)
		if len(rs) != 1 {
			t.Fatalf("ReplicasOf(%d) = %v; want one node", i, rs)
		}
		if got := followed[port(rs[0].Addr())]; got != port(p.Addr()) {
			t.Errorf("replica %s follows port %q; want its primary %s", rs[0].Addr(), got, p.Addr())
		}
	}

	// A write through the cluster client reaches the key's replica.
	if err := cc.Set(ctx, "{r0}:k", "v", 0).Err(); err != nil {
		t.Fatalf("SET = %v", err)
	}
	slot, err := cc.ClusterKeySlot(ctx, "{r0}:k").Result()
	if err != nil {
		t.Fatal(err)
	}
	owner := -1
	for _, s := range shards {
		for _, r := range s.Slots {
			if r.Start <= slot && slot <= r.End {
				for _, n := range s.Nodes {
					if n.Role == "master" {
						owner = slices.IndexFunc(c.Primaries(), func(p *rig.Node) bool { return port(p.Addr()) == fmt.Sprint(n.Port) })
					}
				}
			}
		}
	}
	if owner < 0 {
		t.Fatalf("no primary found for slot %d", slot)
	}
	replica := c.ReplicasOf(owner)[0].Client(func(o *redis.Options) {
		o.OnConnect = func(ctx context.Context, cn *redis.Conn) error { return cn.ReadOnly(ctx).Err() }
	})
	deadline := time.Now().Add(5 * time.Second)
	for replica.Get(ctx, "{r0}:k").Val() != "v" {
		if time.Now().After(deadline) {
			t.Fatalf("the replica %s of the key's primary never saw the write", c.ReplicasOf(owner)[0].Addr())
		}
		time.Sleep(10 * time.Millisecond)
	}

	// The replica takes over on CLUSTER FAILOVER, and the cluster client
	// follows it there.
	if err := replica.Do(ctx, "cluster", "failover").Err(); err != nil {
		t.Fatalf("CLUSTER FAILOVER on %s = %v", c.ReplicasOf(owner)[0].Addr(), err)
	}
	for {
		role, err := replica.Do(ctx, "role").Slice()
		if err == nil && len(role) > 0 && role[0] == "master" {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the replica did not become a primary after CLUSTER FAILOVER: ROLE = %v, %v", role, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for {
		err := cc.Set(ctx, "{r0}:k", "after", 0).Err()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("SET through the cluster client after the failover = %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := replica.Get(ctx, "{r0}:k").Val(); got != "after" {
		t.Errorf("GET on the new primary = %q; want %q", got, "after")
	}
}

func TestClusterRejectsBadReplicas(t *testing.T) {
	for _, n := range []int{-1, 3} {
		c, err := rig.NewCluster(context.Background(), 3, rig.WithReplicas(n))
		if err == nil {
			_ = c.Close()
			t.Errorf("NewCluster(3, WithReplicas(%d)) = nil error; want one", n)
			continue
		}
		if !strings.Contains(err.Error(), "WithReplicas") {
			t.Errorf("NewCluster(3, WithReplicas(%d)) = %q; want it to name WithReplicas", n, err)
		}
	}
}

// port returns the port of a "host:port" address.
func port(addr string) string {
	_, p, _ := strings.Cut(addr, ":")
	return p
}
