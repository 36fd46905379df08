package rig_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

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
