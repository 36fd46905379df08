package labs

import (
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/internal/rig"
)

// A scene's view of several independent nodes (labs 08 and 09): what each
// holds, and the faults done to them. Each helper records what it did on
// the timeline.

// ValueOn returns key's value on node, "-" when it is absent or "down" when
// the node does not answer. It uses a connection of its own, so no pooled
// connection to a killed server gets in the way.
func (s *Scene) ValueOn(node *rig.Node, key string) string {
	c := redis.NewClient(rig.ClientOptions(node.Addr()))
	defer c.Close()
	v, err := c.Get(s.Ctx, key).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return "-"
	case err != nil:
		return "down"
	}
	return v
}

// ShowNodes notes, node by node, whose token the lock's key holds: "a1"
// for A's first lock, "-" for no key, "down" for a node that does not
// answer.
func (s *Scene) ShowNodes(nodes []*rig.Node) {
	vals := make([]string, len(nodes))
	for i, n := range nodes {
		vals[i] = s.ValueOn(n, s.Key)
	}
	s.Note("%s on nodes 0-%d: %s", s.Key, len(nodes)-1, strings.Join(vals, " "))
}

// WaitGone waits until the lock's key is gone from every one of nodes.
func (s *Scene) WaitGone(nodes ...*rig.Node) {
	s.t.Helper()
	s.Eventually(s.Key+" is gone from the nodes", func() (bool, error) {
		for _, n := range nodes {
			if s.ValueOn(n, s.Key) != "-" {
				return false, nil
			}
		}
		return true, nil
	})
}

// CutOff returns the addresses a client cut off from nodes cut should use:
// the other nodes directly, and for each cut node a fault proxy that
// resets every connection, as a network partition that rejects traffic
// does. Other clients still reach every node.
func (s *Scene) CutOff(who string, nodes []*rig.Node, cut ...int) []string {
	addrs := make([]string, len(nodes))
	for i, n := range nodes {
		addrs[i] = n.Addr()
	}
	names := make([]string, len(cut))
	for j, i := range cut {
		p := faultproxy.Start(s.t, nodes[i].Addr())
		p.Reset()
		addrs[i] = p.Addr()
		names[j] = fmt.Sprint(i)
	}
	s.Fault("network: %s cannot reach nodes %s (connections reset)", who, strings.Join(names, " and "))
	return addrs
}
