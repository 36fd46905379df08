package lab09_test

import (
	"time"

	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/internal/rig"
	"github.com/locklab/locklab/labs"
)

// Part 3: the limit of fencing on Redis. The token counter is a key on one
// primary, and replication is asynchronous.

// counterGoesBack: a primary and a replica, with the replica's stream held
// back in the network (as in lab 07). A takes the lock for order 1001 twice
// on the primary (tokens 33 and 34), and keeps the second. Neither INCR
// reaches the replica. The primary dies, the replica is promoted with the
// counter at 32, and B gets token 33: lower than the token A still holds.
// B writes; A, whose lock died with the old primary but is valid by its own
// clock, writes after it, and the store, which trusts the larger token,
// takes A's write over B's. The store is package fencing's, the fix of
// part 1.
func counterGoesBack(s *labs.Scene, impl *labs.Impl) {
	useDatabase(s)
	s.TTL = failoverLease
	p := newPair(s)
	p.holdBack()
	a := s.Client("A", impl, labs.Addrs(p.primary.Addr()))

	// A's first visit to order 1001: nothing to do yet.
	s.Must(a.Lock())
	expectToken(s, "A", firstToken)
	a.Note("order 1001 not paid yet: nothing to do")
	s.Must(a.Unlock())
	// A's second visit: the order is paid, A starts packing it.
	s.Must(a.Lock())
	p.showCounter(member{"primary", p.primary}, member{"replica", p.replica})
	do(s, a, validFor)

	p.failover()
	p.showCounter(member{"new primary", p.replica})

	b := s.Client("B", impl, labs.Addrs(p.replica.Addr()))
	s.Must(b.Lock())
	write(s, b, dataB)
	do(s, a, validFor) // A still holds the lock, by its own clock
	write(s, a, dataA)
	s.Must(b.Unlock())
	unlock(s, a) // its primary is gone
	if showRow(s, b) == dataA {
		s.Note("the store took A's write over B's: A's token is larger, B's lock is newer")
	}
	checkTokensIncrease(s)
}

// pair is a primary and one replica, which follows it through a fault
// proxy, so that the scenario can hold replication back in the network
// (see lab 07's cluster).
type pair struct {
	s                *labs.Scene
	primary, replica *rig.Node
	link             *faultproxy.Proxy // carries the replication stream
}

// newPair starts the two servers, sets the token counter to firstToken-1
// on the primary, and waits until the replica has it.
func newPair(s *labs.Scene) *pair {
	s.T().Helper()
	s.RequireControl() // kills and promotes servers
	nodes := s.Nodes(2)
	p := &pair{s: s, primary: nodes[0], replica: nodes[1]}
	p.link = faultproxy.Start(s.T(), p.primary.Addr())
	s.Must(p.replica.ReplicaOf(s.Ctx, p.link.Addr()))

	s.Must(s.Redis().Set(s.Ctx, counterOf(s.Key), firstToken-1, 0).Err())
	s.Must(p.primary.WaitReplicas(s.Ctx, 1, syncTimeout)) // the counter reached the replica
	s.Note("a primary and a replica, in sync; token counter %s = %d on both", counterOf(s.Key), firstToken-1)
	return p
}

// syncTimeout bounds the wait for the replica. It only fails a run that
// would hang: a healthy replica acknowledges within a second.
const syncTimeout = 10 * time.Second

// holdBack stops the replication stream in the network.
func (p *pair) holdBack() {
	p.link.Blackhole()
	p.s.Fault("replication held back: the stream to the replica is stuck in the network")
}

// failover kills the primary and promotes the replica, as Sentinel would.
func (p *pair) failover() {
	pid := p.primary.Pid()
	p.s.Must(p.primary.Kill())
	p.s.Fault("kill -9 primary (pid %d)", pid)
	p.s.Must(p.replica.Promote(p.s.Ctx))
	p.s.Fault("REPLICAOF NO ONE on the replica: the new primary")
}

// member is a server as the timeline names it.
type member struct {
	name string
	node *rig.Node
}

// showCounter notes, for each member, the token counter's value and
// whether the lock's key is there.
func (p *pair) showCounter(members ...member) {
	for _, m := range members {
		lock := "lock held"
		switch p.s.ValueOn(m.node, p.s.Key) {
		case "-":
			lock = "no lock"
		case "down":
			lock = "down"
		}
		p.s.Note("%s: token counter %s, %s", m.name, p.s.ValueOn(m.node, counterOf(p.s.Key)), lock)
	}
}
