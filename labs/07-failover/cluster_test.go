package lab07_test

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/internal/rig"
	"github.com/locklab/locklab/labs"
)

// cluster is a primary with two replicas, as a Sentinel deployment has
// (labs.ReplicaSet: each replica follows the primary through its own fault
// proxy, so the scenario can hold replication back for real). Held bytes
// are never delivered: the replica is promoted or the primary killed before
// the link could heal.
type cluster struct {
	*labs.ReplicaSet
	s *labs.Scene
}

// newCluster starts the three servers and waits until both replicas are
// in sync.
func newCluster(s *labs.Scene) *cluster {
	s.T().Helper()
	c := &cluster{ReplicaSet: s.Replicated(2), s: s}
	s.Note("a primary and 2 replicas, in sync")
	return c
}

func (c *cluster) all() []labs.Member {
	return []labs.Member{{Name: "primary", Node: c.Primary}, {Name: "replica 1", Node: c.Replicas[0]}, {Name: "replica 2", Node: c.Replicas[1]}}
}

// show notes which servers hold the lock's key, and whose token is in it.
func (c *cluster) show(members ...labs.Member) {
	parts := make([]string, len(members))
	for i, m := range members {
		parts[i] = m.Name + ": " + valueOn(c.s, m.Node)
	}
	c.s.Note("%s on %s", c.s.Key, strings.Join(parts, ", "))
}

// has reports whether node holds the lock's key.
func (c *cluster) has(node *rig.Node) bool {
	v := valueOn(c.s, node)
	return v != "none" && v != "down"
}

// valueOn returns the lock key's value on node as the harness reads it
// (Scene.ValueOn, on a connection of its own, so no pooled connection
// killed by a failover gets in the way), with "none" for no key.
func valueOn(s *labs.Scene, node *rig.Node) string {
	if v := s.ValueOn(node, s.Key); v != "-" {
		return v
	}
	return "none"
}

// failoverByHand kills the primary and does what Sentinel would: promote
// replica 1 and make replica 2 follow it. It returns the new primary and
// the replica left.
func (c *cluster) failoverByHand() (primary, replica *rig.Node) {
	c.Failover("primary")
	c.s.Must(c.Replicas[1].ReplicaOf(c.s.Ctx, c.Replicas[0].Addr()))
	c.s.InSync(c.Replicas[0], 1)
	c.s.Fault("replica 2 now follows the new primary (in sync)")
	return c.Replicas[0], c.Replicas[1]
}

// watch starts three sentinels monitoring the primary. Call it after
// newCluster: the group is ready once every sentinel sees both replicas.
func (c *cluster) watch() *rig.Sentinels {
	sentinels := rig.StartSentinels(c.s.T(), c.Primary, 3)
	c.s.Note("3 sentinels watch the primary (quorum 2, down-after 1 s)")
	return sentinels
}

// failoverBySentinel kills the primary and lets the sentinels fail over:
// it waits until a quorum of them name a promoted replica, then until the
// other replica follows it (Sentinel reconfigures it). Which replica is
// promoted is Sentinel's choice. It returns the new primary and the replica
// left.
func (c *cluster) failoverBySentinel(sentinels *rig.Sentinels) (primary, replica *rig.Node) {
	old := c.Primary.Addr()
	c.s.KillNode("primary", c.Primary)
	killed := time.Now()
	addr, err := sentinels.WaitFailover(c.s.Ctx, old)
	c.s.Must(err)
	for i, r := range c.Replicas {
		if r.Addr() == addr {
			primary, replica = r, c.Replicas[1-i]
		}
	}
	if primary == nil {
		c.s.T().Fatalf("lab07: sentinels promoted %s, which is neither replica", addr)
	}
	c.s.Note("Sentinel failover: a replica promoted, %d ms after the kill", time.Since(killed).Milliseconds())
	c.s.Eventually("the other replica follows the new primary", func() (bool, error) {
		return follows(c.s.Ctx, replica, addr)
	})
	c.s.InSync(primary, 1)
	c.s.Note("Sentinel made the other replica follow it (in sync)")
	return primary, replica
}

// follows reports whether node is a replica of primaryAddr with its link
// up.
func follows(ctx context.Context, node *rig.Node, primaryAddr string) (bool, error) {
	host, port, err := net.SplitHostPort(primaryAddr)
	if err != nil {
		return false, err
	}
	info, err := node.Info(ctx, "replication")
	if err != nil {
		return false, nil // busy being reconfigured; ask again
	}
	want := []string{"role:slave", "master_host:" + host, "master_port:" + port, "master_link_status:up"}
	lines := map[string]bool{}
	for _, l := range strings.Split(info, "\n") {
		lines[strings.TrimSpace(l)] = true
	}
	for _, w := range want {
		if !lines[w] {
			return false, nil
		}
	}
	return true, nil
}

// longEnv turns on the labs' long variants.
const longEnv = "LOCKLAB_LONG"

// requireLong skips a long variant unless it was asked for: it waits for a
// real Sentinel failover, several seconds, which the default run of the lab
// does without.
func requireLong(t *testing.T) {
	t.Helper()
	if testing.Short() || os.Getenv(longEnv) == "" {
		t.Skipf("the Sentinel variant waits for a real failover (about 10 s); run it with: %s=1 go test -v -run Sentinel ./labs/07-failover/", longEnv)
	}
}
