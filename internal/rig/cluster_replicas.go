package rig

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// clusterMaxReplicas bounds the replicas per primary a test may ask for.
const clusterMaxReplicas = 2

// ClusterOption configures a cluster started by [StartCluster] or
// [NewCluster].
type ClusterOption func(*clusterConfig)

type clusterConfig struct {
	replicas int // per primary
}

func newClusterConfig(opts []ClusterOption) (clusterConfig, error) {
	var c clusterConfig
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if c.replicas < 0 || c.replicas > clusterMaxReplicas {
		return c, fmt.Errorf("rig: cluster: WithReplicas(%d); want 0 to %d replicas per primary", c.replicas, clusterMaxReplicas)
	}
	return c, nil
}

// WithReplicas gives every primary n replicas (0 to 2), each a redis-server
// of its own that follows that primary (CLUSTER REPLICATE), as a production
// cluster of "three primaries, a replica each" has. The default is 0: a
// cluster of primaries only.
func WithReplicas(n int) ClusterOption { return func(c *clusterConfig) { c.replicas = n } }

// Primaries returns the nodes started as primaries, in start order (a
// failover made by a test may have changed their roles since).
func (c *Cluster) Primaries() []*Node { return append([]*Node(nil), c.nodes[:c.primaries]...) }

// ReplicasOf returns the replicas started to follow primary i (index into
// [Cluster.Primaries]); none without [WithReplicas].
func (c *Cluster) ReplicasOf(i int) []*Node {
	from := c.primaries + i*c.replicas
	return append([]*Node(nil), c.nodes[from:from+c.replicas]...)
}

// attachReplicas makes each replica meet the cluster (at primary 0's bus
// port) and follow its primary, once it has learnt the primary's node id
// through the cluster's gossip.
func (c *Cluster) attachReplicas(ctx context.Context) error {
	if c.replicas == 0 {
		return nil
	}
	ids := make([]string, c.primaries)
	for i, nd := range c.nodes[:c.primaries] {
		p := redis.NewClient(probeOptions(nd.Addr(), time.Second))
		id, err := p.Do(ctx, "cluster", "myid").Text()
		_ = p.Close()
		if err != nil {
			return fmt.Errorf("rig: cluster: CLUSTER MYID on %s: %w", nd.Addr(), err)
		}
		ids[i] = id
	}
	seedPort := strings.TrimPrefix(c.nodes[0].Addr(), "127.0.0.1:")
	for i := range c.primaries {
		for r := range c.replicas {
			j := c.primaries + i*c.replicas + r
			if err := c.follow(ctx, c.nodes[j], seedPort, c.bus[0], ids[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// follow makes the fresh node nd meet the cluster and replicate the
// primary whose node id is id, retrying CLUSTER REPLICATE until nd knows
// that node.
func (c *Cluster) follow(ctx context.Context, nd *Node, seedPort string, seedBus int, id string) error {
	p := redis.NewClient(probeOptions(nd.Addr(), time.Second))
	defer p.Close()
	if err := p.Do(ctx, "cluster", "meet", "127.0.0.1", seedPort, strconv.Itoa(seedBus)).Err(); err != nil {
		return fmt.Errorf("rig: cluster: CLUSTER MEET from %s: %w", nd.Addr(), err)
	}
	for {
		err := p.Do(ctx, "cluster", "replicate", id).Err()
		if err == nil {
			return nil
		}
		if !strings.Contains(err.Error(), "Unknown node") {
			return fmt.Errorf("rig: cluster: CLUSTER REPLICATE %s on %s: %w", id, nd.Addr(), err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("rig: cluster: %s never learnt of primary %s: %w", nd.Addr(), id, ctx.Err())
		case <-time.After(clusterPoll):
		}
	}
}

// replicaLinkDown returns "" when the replica behind p has its link to its
// primary up and has synced, else what INFO replication says instead.
func replicaLinkDown(ctx context.Context, p *redis.Client) string {
	info, err := p.Info(ctx, "replication").Result()
	if err != nil {
		return err.Error()
	}
	role, link := "", ""
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "role:"); ok {
			role = v
		}
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "master_link_status:"); ok {
			link = v
		}
	}
	if role != "slave" || link != "up" {
		return fmt.Sprintf("role:%s master_link_status:%s (want slave, up)", role, link)
	}
	return ""
}

// shardsMismatch returns "" when the node behind p sees the cluster as
// made: as many shards as primaries, each of one primary and its
// replicas, none failed; else what it sees instead. (A replica's shard is
// learnt through gossip a little after it follows its primary: until then
// Valkey lists it as a shard of its own. Its health stays "loading" until
// its primary's replication offset moves, which on an empty primary is at
// its next replication ping, up to 10s: replicaLinkDown checks the sync.)
func (c *Cluster) shardsMismatch(ctx context.Context, p *redis.Client) string {
	if c.replicas == 0 {
		return "" // CLUSTER INFO's cluster_size says it all
	}
	shards, err := p.ClusterShards(ctx).Result()
	if err != nil {
		return "CLUSTER SHARDS: " + err.Error()
	}
	if len(shards) != c.primaries {
		return fmt.Sprintf("CLUSTER SHARDS lists %d shards (want %d)", len(shards), c.primaries)
	}
	for _, s := range shards {
		primaries := 0
		for _, n := range s.Nodes {
			if n.Role == "master" {
				primaries++
			}
			if n.Health == "fail" {
				return fmt.Sprintf("CLUSTER SHARDS: node %s:%d has failed", n.IP, n.Port)
			}
		}
		if primaries != 1 || len(s.Nodes) != 1+c.replicas {
			return fmt.Sprintf("CLUSTER SHARDS: a shard of %d nodes, %d primaries (want %d nodes, 1 primary)", len(s.Nodes), primaries, 1+c.replicas)
		}
	}
	return ""
}
