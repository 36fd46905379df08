package lab09_test

import (
	"github.com/locklab/locklab/labs"
)

// Part 2: lab 08's Redlock failures that Redlock cannot fix, replayed with
// fencing tokens (lab09.Redlock: the tokens come from a counter on node 0).

// redlockPaused is lab 08's (b): A holds the Redlock on all five nodes and
// checks it is still valid; its process freezes until the keys have expired
// everywhere; B takes the lock and writes; A thaws and writes.
func redlockPaused(s *labs.Scene, impl *labs.Impl) {
	useDatabase(s)
	nodes := s.Nodes(5)
	setCounter(s, nodes[0], firstToken-1)
	s.TTL = shortLease
	a := s.Process("A", impl) // a real process, so it can really freeze
	b := s.Client("B", impl, labs.TTL(lease))
	a.MustDo(labs.Connect, "")

	s.Must(a.Lock())
	expectToken(s, "A", firstToken)
	s.ShowNodes(nodes)
	a.MustDo(labs.ValidFor, "")

	a.Freeze()
	s.WaitExpiredOn(nodes, "A is still frozen")

	s.Must(b.Lock())
	s.ShowNodes(nodes)
	writeAsHolder(s, b, dataB)

	a.Thaw()
	write(s, a, dataA)
	a.ReleaseAfterFault()
	s.Must(b.Unlock())
	showRow(s, b)
	checkTokensIncrease(s)
}

// redlockClockJump is lab 08's (c): A, cut off from nodes 3 and 4, holds
// the Redlock on nodes 0, 1 and 2; node 2's clock jumps past the key's
// expiry (modeled, as in lab 08: PEXPIRE key 1 on node 2); B gets a
// majority of its own while A's lock is still valid by A's clock. Both hold
// the lock, each with a token: only the newer one gets through the store.
func redlockClockJump(s *labs.Scene, impl *labs.Impl) {
	useDatabase(s)
	nodes := s.Nodes(5)
	setCounter(s, nodes[0], firstToken-1)
	s.TTL = lease
	a := s.Client("A", impl, labs.Addrs(s.CutOff("A", nodes, 3, 4)...))
	b := s.Client("B", impl)

	s.Must(a.Lock()) // nodes 0, 1 and 2: 3 of 5, and token 33 from node 0
	expectToken(s, "A", firstToken)
	s.ShowNodes(nodes)
	a.MustDo(labs.ValidFor, "")

	s.JumpClock(nodes, 2)

	got, err := b.TryLock()
	s.Must(err)
	if !got {
		s.T().Fatalf("lab09: B did not get the lock after node 2's jump, so this run shows nothing about fencing")
	}
	s.ShowNodes(nodes)
	writeAsHolder(s, b, dataB)
	a.MustDo(labs.ValidFor, "") // A still holds the lock, by its own clock
	write(s, a, dataA)
	s.Must(b.Unlock())
	s.Must(a.Unlock())
	showRow(s, b)
	checkTokensIncrease(s)
}
