package labs

import (
	"time"

	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/internal/rig"
)

// syncTimeout bounds how long [Scene.InSync] waits for replicas. It only
// fails a run that would hang: healthy replicas on loopback catch up in
// well under a second.
const syncTimeout = 10 * time.Second

// ReplicaSet is a primary and its replicas, as a Sentinel deployment has
// (labs 07 and 09). Each replica follows the primary through a fault proxy
// of its own, so a scenario can hold replication back for real: the proxy
// holds every byte of the replication stream, as a congested or
// partitioned network does, and no process is touched.
type ReplicaSet struct {
	s        *Scene
	Primary  *rig.Node
	Replicas []*rig.Node
	links    []*faultproxy.Proxy // links[i] carries replica i's replication stream
}

// Replicated starts a primary and n replicas (the scene's nodes: the
// primary first) and waits until every replica is in sync. It skips the
// test on servers from LOCKLAB_REDIS_ADDRS, which it cannot configure.
func (s *Scene) Replicated(n int) *ReplicaSet {
	s.t.Helper()
	s.RequireControl() // kills and promotes servers
	nodes := s.Nodes(n + 1)
	r := &ReplicaSet{s: s, Primary: nodes[0], Replicas: nodes[1:]}
	for _, rep := range r.Replicas {
		link := faultproxy.Start(s.t, r.Primary.Addr())
		r.links = append(r.links, link)
		s.Must(rep.ReplicaOf(s.Ctx, link.Addr()))
	}
	s.InSync(r.Primary, n)
	return r
}

// HoldBack stops the replication stream to the given replicas (0 for the
// first) in the network, and says so on the timeline. Held bytes are never
// delivered unless [ReplicaSet.Heal] is called.
func (r *ReplicaSet) HoldBack(replicas ...int) {
	for _, i := range replicas {
		r.links[i].Blackhole()
	}
	switch {
	case len(replicas) == len(r.Replicas) && len(replicas) == 1:
		r.s.Fault("replication held back: the stream to the replica is stuck in the network")
	case len(replicas) == len(r.Replicas) && len(replicas) == 2:
		r.s.Fault("replication held back: the stream to both replicas is stuck in the network")
	case len(replicas) == len(r.Replicas):
		r.s.Fault("replication held back: the stream to all %d replicas is stuck in the network", len(replicas))
	case len(replicas) == 1 && len(r.Replicas) == 2:
		r.s.Fault("replication to replica %d held back; replica %d keeps up", replicas[0]+1, 2-replicas[0])
	default:
		r.s.Fault("replication to replicas %v held back", replicas)
	}
}

// Heal lets the held replication streams flow again.
func (r *ReplicaSet) Heal() {
	for _, l := range r.links {
		l.Heal()
	}
	r.s.Fault("replication flows again")
}

// Failover kills the primary (named name on the timeline, see
// [Scene.KillNode]) and promotes the first replica, which it returns: the
// failover Sentinel would make, done by hand. Any other replicas still
// follow the dead primary.
func (r *ReplicaSet) Failover(name string) *rig.Node {
	r.s.t.Helper()
	r.s.KillNode(name, r.Primary)
	promoted := r.Replicas[0]
	r.s.Must(promoted.Promote(r.s.Ctx))
	if len(r.Replicas) == 1 {
		r.s.Fault("REPLICAOF NO ONE on the replica: the new primary")
	} else {
		r.s.Fault("REPLICAOF NO ONE on replica 1: the new primary")
	}
	return promoted
}

// Member is a server as the timeline names it: "primary", "replica 1".
type Member struct {
	Name string
	Node *rig.Node
}

// InSync waits until n replicas of primary have every write it accepted so
// far (a probe write, then WAIT on its connection).
func (s *Scene) InSync(primary *rig.Node, n int) {
	s.t.Helper()
	s.Must(primary.WaitReplicas(s.Ctx, n, syncTimeout))
}
