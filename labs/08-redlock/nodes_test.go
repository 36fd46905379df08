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
