package lab08_test

import (
	"fmt"

	"github.com/locklab/locklab/internal/rig"
	"github.com/locklab/locklab/labs"
)

// The lab's view of the five independent nodes, beyond the harness's
// (Scene.ShowNodes, ValueOn, WaitGone, CutOff, shared with lab 09): what
// each holds, and the faults done to them. Each helper records what it did
// on the timeline.

// waitChanged waits until none of nodes still holds the value it held
// when before was taken (see values): the locks seen then are over.
func waitChanged(s *labs.Scene, nodes []*rig.Node, before []string) {
	s.Eventually("the locks seen before are over", func() (bool, error) {
		for i, n := range nodes {
			if before[i] != "-" && s.ValueOn(n, s.Key) == before[i] {
				return false, nil
			}
		}
		return true, nil
	})
}

// killNode crashes node i with SIGKILL: it loses everything not on disk.
func killNode(s *labs.Scene, nodes []*rig.Node, i int) {
	s.KillNode(fmt.Sprintf("node %d", i), nodes[i])
}

// work is a holder's whole critical section: enter, ship, exit, unlock.
func work(s *labs.Scene, c *labs.Client) {
	c.Enter()
	c.Write(order)
	c.Exit()
	s.Must(c.Unlock())
}

// tryLock runs TryLock in c and reports whether it got the lock. A refusal
// is on the timeline; only a client that died fails the test.
func tryLock(s *labs.Scene, c *labs.Client) bool {
	ok, err := c.TryLock()
	if labs.IsGone(err) {
		s.Must(err)
	}
	return ok
}
