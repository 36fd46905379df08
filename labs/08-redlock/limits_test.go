package lab08_test

import (
	"testing"

	"github.com/locklab/locklab/labs"
)

// Parts (b) and (c): what Redlock cannot fix. Lab 09 (fencing) replays
// both with the stale write refused.

// pausedHolder: A holds the lock on all five nodes and checks that it is
// still valid; then its process freezes (a stop-the-world GC pause, a VM
// descheduled by its host) until its keys have expired everywhere. B takes
// the lock and ships the order; A thaws and ships it too. A's lock lives
// 1s, so the wait is short; B's lives 10s (see withTTL).
func pausedHolder(s *labs.Scene, impl *labs.Impl) {
	s.TTL = shortLease
	s.RequireControl() // kills, restarts or cuts off servers
	nodes := s.Nodes(5)
	a := s.Process("A", impl) // a real process, so it can really freeze
	b := s.Client("B", impl, labs.TTL(lease))
	a.MustDo(labs.Connect, "")

	s.Must(a.Lock())
	s.ShowNodes(nodes)
	a.Enter()
	a.MustDo(labs.ValidFor, "") // A checks its lock before the work: plenty left

	a.Freeze()
	s.WaitExpiredOn(nodes, "A is still frozen")
	s.Must(b.Lock())
	s.ShowNodes(nodes)
	work(s, b)

	a.Thaw()
	a.Write(order) // the write A was about to make when it froze
	a.Exit()
	a.ReleaseAfterFault() // not held: the timeline says so
}

// clockJump: A, cut off from nodes 3 and 4, takes the lock on nodes 0, 1
// and 2. Node 2's clock jumps forward, past the key's expiry. B asks for
// the lock while A works.
//
// The jump is modeled: Redis stores a key's expiry as an absolute
// wall-clock time, so a node whose clock jumps forward past it drops the
// key at once. PEXPIRE key 1 on that node has exactly that effect on the
// lock's key. A real clock shift of one redis-server is not available here
// (see the README).
func clockJump(s *labs.Scene, impl *labs.Impl) {
	s.TTL = lease
	nodes, a, b := aHoldsThreeOfFive(s, impl)

	s.JumpClock(nodes, 2)

	got := tryLock(s, b)
	if got {
		s.ShowNodes(nodes)
		b.Enter()
		a.MustDo(labs.ValidFor, "")
		b.Write(order)
		b.Exit()
		s.Must(b.Unlock())
	}
	a.Write(order)
	a.Exit()
	s.Must(a.Unlock())
	if !got {
		s.Must(b.Lock())
		work(s, b)
	}
}

// (b) A holder paused past its validity. Redlock cannot fix this; lab 09
// (fencing) does.

func TestLab08_BrokenHolderPausedPastValidity(t *testing.T) {
	labs.Broken(t, titlePaused, pausedHolder, redlockImpl)
}

// (c) A clock that jumps on one node (modeled). Redlock cannot fix this;
// lab 09 (fencing) does.

func TestLab08_BrokenClockJumpModeled(t *testing.T) {
	labs.Broken(t, titleClock, clockJump, redlockImpl)
}
