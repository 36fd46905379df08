package lab08_test

import (
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/internal/rig"
	"github.com/locklab/locklab/labs"
)

// The lab's view of the five independent nodes: what each holds, and the
// faults done to them. Each helper records what it did on the timeline.

// show notes, node by node, whose token the lock's key holds: "a1" for
// A's first lock, "-" for no key, "down" for a node that does not answer.
func show(s *labs.Scene, nodes []*rig.Node) {
	vals := make([]string, len(nodes))
	for i, n := range nodes {
		vals[i] = valueOn(s, n)
	}
	s.Note("%s on nodes 0-%d: %s", s.Key, len(nodes)-1, strings.Join(vals, " "))
}

// valueOn returns the lock key's value on node, "-" when it is absent or
// "down" when the node does not answer. It uses a connection of its own,
// so no pooled connection to a killed server gets in the way.
func valueOn(s *labs.Scene, node *rig.Node) string {
	c := redis.NewClient(rig.ClientOptions(node.Addr()))
	defer c.Close()
	v, err := c.Get(s.Ctx, s.Key).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return "-"
	case err != nil:
		return "down"
	}
	return v
}

// waitGone waits until the lock's key is gone from every one of nodes.
func waitGone(s *labs.Scene, nodes ...*rig.Node) {
	s.Eventually(s.Key+" is gone from the nodes", func() (bool, error) {
		for _, n := range nodes {
			if valueOn(s, n) != "-" {
				return false, nil
			}
		}
		return true, nil
	})
}

// waitChanged waits until none of nodes still holds the value it held
// when before was taken (see values): the locks seen then are over.
func waitChanged(s *labs.Scene, nodes []*rig.Node, before []string) {
	s.Eventually("the locks seen before are over", func() (bool, error) {
		for i, n := range nodes {
			if before[i] != "-" && valueOn(s, n) == before[i] {
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
		out[i] = valueOn(s, n)
	}
	return out
}

// kill crashes node i with SIGKILL: it loses everything not on disk.
func kill(s *labs.Scene, nodes []*rig.Node, i int) {
	pid := nodes[i].Pid()
	s.Must(nodes[i].Kill())
	s.Fault("kill -9 node %d (pid %d)", i, pid)
}

// cutOff returns the addresses a client cut off from nodes cut should
// use: the other nodes directly, and for each cut node a fault proxy that
// resets every connection, as a network partition that rejects traffic
// does. Other clients still reach every node.
func cutOff(s *labs.Scene, who string, nodes []*rig.Node, cut ...int) []string {
	addrs := make([]string, len(nodes))
	for i, n := range nodes {
		addrs[i] = n.Addr()
	}
	names := make([]string, len(cut))
	for j, i := range cut {
		p := faultproxy.Start(s.T(), nodes[i].Addr())
		p.Reset()
		addrs[i] = p.Addr()
		names[j] = fmt.Sprint(i)
	}
	s.Fault("network: %s cannot reach nodes %s (connections reset)", who, strings.Join(names, " and "))
	return addrs
}
