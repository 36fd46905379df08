package lab08_test

import (
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

// values returns the lock key's value on each of nodes (see valueOn).
func values(s *labs.Scene, nodes []*rig.Node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = s.ValueOn(n, s.Key)
	}
	return out
}

// kill crashes node i with SIGKILL: it loses everything not on disk.
func kill(s *labs.Scene, nodes []*rig.Node, i int) {
	pid := nodes[i].Pid()
	s.Must(nodes[i].Kill())
	s.Fault("kill -9 node %d (pid %d)", i, pid)
}
