package lab09_test

import (
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
	p.HoldBack(0)
	a := s.Client("A", impl, labs.Addrs(p.Primary.Addr()))

	// A's first visit to order 1001: nothing to do yet.
	s.Must(a.Lock())
	expectToken(s, "A", firstToken)
	a.Note("order 1001 not paid yet: nothing to do")
	s.Must(a.Unlock())
	// A's second visit: the order is paid, A starts packing it.
	s.Must(a.Lock())
	p.showCounter(labs.Member{Name: "primary", Node: p.Primary}, labs.Member{Name: "replica", Node: p.Replicas[0]})
	a.MustDo(labs.ValidFor, "")

	p.Failover("primary") // as Sentinel would
	p.showCounter(labs.Member{Name: "new primary", Node: p.Replicas[0]})

	b := s.Client("B", impl, labs.Addrs(p.Replicas[0].Addr()))
	s.Must(b.Lock())
	write(s, b, dataB)
	a.MustDo(labs.ValidFor, "") // A still holds the lock, by its own clock
	write(s, a, dataA)
	s.Must(b.Unlock())
	a.ReleaseAfterFault() // its primary is gone
	if showRow(s, b) == dataA {
		s.Note("the store took A's write over B's: A's token is larger, B's lock is newer")
	}
	checkTokensIncrease(s)
}

// pair is a primary and one replica, which follows it through a fault
// proxy (labs.ReplicaSet), so that the scenario can hold replication back
// in the network, as in lab 07.
type pair struct {
	*labs.ReplicaSet
	s *labs.Scene
}

// newPair starts the two servers, sets the token counter to firstToken-1
// on the primary, and waits until the replica has it.
func newPair(s *labs.Scene) *pair {
	s.T().Helper()
	p := &pair{ReplicaSet: s.Replicated(1), s: s}
	s.Must(s.Redis().Set(s.Ctx, counterOf(s.Key), firstToken-1, 0).Err())
	s.InSync(p.Primary, 1) // the counter reached the replica
	s.Note("a primary and a replica, in sync; token counter %s = %d on both", counterOf(s.Key), firstToken-1)
	return p
}

// showCounter notes, for each member, the token counter's value and
// whether the lock's key is there.
func (p *pair) showCounter(members ...labs.Member) {
	for _, m := range members {
		lock := "lock held"
		switch p.s.ValueOn(m.Node, p.s.Key) {
		case "-":
			lock = "no lock"
		case "down":
			lock = "down"
		}
		p.s.Note("%s: token counter %s, %s", m.Name, p.s.ValueOn(m.Node, counterOf(p.s.Key)), lock)
	}
}
