package lab07_test

import (
	"testing"

	"github.com/locklab/locklab/labs"
)

// Part 2: what WAIT does not promise.

// ackingReplicaDies: WAIT is satisfied by replica 2 while replica 1 lags;
// then the primary and replica 2 lose power together, replica 1 is
// promoted (the only one left: Sentinel would choose it too), and replica
// 2 comes back empty and follows it.
func ackingReplicaDies(s *labs.Scene, impl *labs.Impl) {
	s.TTL = lease
	c := newCluster(s)
	c.HoldBack(0)

	a := s.Client("A", impl, labs.Addrs(c.Primary.Addr()))
	s.Must(a.Lock()) // WAIT 1: replica 2's ack is enough
	c.show(c.all()...)
	a.Enter()
	a.MustDo(labs.ValidFor, "")

	// One rack holds the primary and replica 2, and it loses power.
	s.KillNode("primary", c.Primary)
	s.KillNode("replica 2", c.Replicas[1])
	s.Must(c.Replicas[0].Promote(s.Ctx))
	s.Fault("REPLICAOF NO ONE on replica 1: the new primary (the only replica left)")
	s.Must(c.Replicas[1].Restart(s.Ctx, false))
	s.Must(c.Replicas[1].ReplicaOf(s.Ctx, c.Replicas[0].Addr()))
	s.InSync(c.Replicas[0], 1)
	s.Fault("replica 2 back, empty; it follows the new primary (in sync)")
	c.show(labs.Member{Name: "new primary", Node: c.Replicas[0]}, labs.Member{Name: "replica 2", Node: c.Replicas[1]})

	b := s.Client("B", impl, labs.Addrs(c.Replicas[0].Addr()))
	s.Must(b.Lock()) // WAIT 1: replica 2 acknowledges B's SET too
	b.Enter()
	a.MustDo(labs.ValidFor, "")
	b.Write("refund order 1001")
	b.Exit()
	s.Must(b.Unlock())

	a.Write("refund order 1001")
	a.Exit()
	a.ReleaseAfterFault()
}

// TestLab07_BrokenWaitAckedByAReplicaThatDied shows what WAIT does not
// guarantee: the lock with WAIT 1, and two holders anyway.
func TestLab07_BrokenWaitAckedByAReplicaThatDied(t *testing.T) {
	labs.Broken(t, titleLimit, ackingReplicaDies, waitLock)
}
