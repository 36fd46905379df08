//go:build compose

package composetest_test

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/correct"
	"github.com/locklab/locklab/fencing"
)

// clusterScript runs docker/cluster.sh action, bounded by 3 minutes (it
// does not use the test's context, which Cleanup sees cancelled).
func clusterScript(t *testing.T, action string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(root, "docker", "cluster.sh"), action).CombinedOutput()
	if err != nil {
		return fmt.Errorf("docker/cluster.sh %s: %v\n%s", action, err, out)
	}
	return nil
}

// hostDialer dials a node's address (a container's IP on the stack's
// network, as CLUSTER SLOTS hands it out) on the host's loopback, where
// each node publishes its own port as itself.
func hostDialer(ctx context.Context, network, addr string) (net.Conn, error) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	return d.DialContext(ctx, network, net.JoinHostPort("127.0.0.1", port))
}

// TestClusterStackServesLocks brings the Cluster stack up (docker/cluster.sh
// up: six containers, the cluster formed), checks it is three shards of a
// primary and a replica, and takes locks on keys of every primary through
// a *redis.ClusterClient on the host and through its AutoPipeliner, then
// takes the stack down.
func TestClusterStackServesLocks(t *testing.T) {
	if err := clusterScript(t, "up"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := clusterScript(t, "down"); err != nil {
			t.Error(err)
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	var seeds []string
	for _, p := range clusterPorts(t) {
		seeds = append(seeds, fmt.Sprintf("127.0.0.1:%d", p))
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: seeds, Dialer: hostDialer, DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second})
	t.Cleanup(func() { _ = cc.Close() })

	shards, err := cc.ClusterShards(ctx).Result()
	if err != nil {
		t.Fatalf("CLUSTER SHARDS = %v", err)
	}
	if len(shards) != 3 {
		t.Fatalf("CLUSTER SHARDS lists %d shards; want 3", len(shards))
	}
	type span struct {
		start, end int64
		primary    string
	}
	var spans []span
	for _, s := range shards {
		roles := map[string]int{}
		primary := ""
		for _, n := range s.Nodes {
			roles[n.Role]++
			if n.Role == "master" {
				primary = fmt.Sprintf("%s:%d", n.IP, n.Port)
			}
		}
		if roles["master"] != 1 || roles["replica"] != 1 {
			t.Errorf("shard %+v: roles %v; want one primary and one replica", s.Nodes, roles)
		}
		for _, r := range s.Slots {
			spans = append(spans, span{r.Start, r.End, primary})
		}
	}
	// Every primary has its replica connected.
	err = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		info, err := c.Info(ctx, "replication").Result()
		if err != nil {
			return err
		}
		if !strings.Contains(info, "connected_slaves:1") {
			return fmt.Errorf("%s: INFO replication:\n%s\nwant connected_slaves:1", c.Options().Addr, info)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// A key on each primary.
	keys := map[string]string{} // primary -> key
	for i := 0; len(keys) < 3 && i < 100; i++ {
		key := fmt.Sprintf("composetest:cluster:%d", i)
		slot, err := cc.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range spans {
			if s.start <= slot && slot <= s.end && keys[s.primary] == "" {
				keys[s.primary] = key
			}
		}
	}
	if len(keys) != 3 {
		t.Fatalf("keys %v cover %d primaries; want 3", keys, len(keys))
	}

	ap, err := cc.AutoPipeline()
	if err != nil {
		t.Fatalf("AutoPipeline() = %v", err)
	}
	t.Cleanup(func() { _ = ap.Close() })
	for primary, key := range keys {
		for _, client := range []struct {
			name string
			c    correct.Client
		}{{"ClusterClient", cc}, {"AutoPipeliner", ap}} {
			a := correct.New(client.c, key, correct.WithTTL(10*time.Second))
			b := correct.New(client.c, key, correct.WithTTL(10*time.Second))
			if err := a.Lock(ctx); err != nil {
				t.Fatalf("%s, key on %s: A Lock() = %v", client.name, primary, err)
			}
			if ok, err := b.TryLock(ctx); ok || err != nil {
				t.Errorf("%s, key on %s: B TryLock() while A holds = %v, %v; want false, nil", client.name, primary, ok, err)
			}
			if err := a.Unlock(ctx); err != nil {
				t.Errorf("%s, key on %s: A Unlock() = %v", client.name, primary, err)
			}
			if ok, err := b.TryLock(ctx); !ok || err != nil {
				t.Errorf("%s, key on %s: B TryLock() after A's Unlock = %v, %v; want true, nil", client.name, primary, ok, err)
			} else if err := b.Unlock(ctx); err != nil {
				t.Errorf("%s, key on %s: B Unlock() = %v", client.name, primary, err)
			}
		}
		// fencing's counter shares the key's slot: its script runs on one
		// primary, and each hold's token is larger than the last.
		f := fencing.New(cc, key, fencing.WithTTL(10*time.Second))
		var last fencing.Token
		for range 2 {
			if err := f.Lock(ctx); err != nil {
				t.Fatalf("fencing, key on %s: Lock() = %v", primary, err)
			}
			tok := f.Token()
			if tok <= last {
				t.Errorf("fencing, key on %s: token %v after %v; want it larger", primary, tok, last)
			}
			last = tok
			if err := f.Unlock(ctx); err != nil {
				t.Errorf("fencing, key on %s: Unlock() = %v", primary, err)
			}
		}
		if n, err := cc.Exists(ctx, key).Result(); err != nil || n != 0 {
			t.Errorf("key on %s: EXISTS %s after every Unlock = %d, %v; want 0", primary, key, n, err)
		}
	}
}
