package lab09_test

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/internal/rig"
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
	b := s.Client("B", impl, withTTL(lease))
	do(s, a, connect)

	s.Must(a.Lock())
	expectToken(s, "A", firstToken)
	show(s, nodes)
	do(s, a, validFor)

	a.Freeze()
	waitGone(s, nodes...)
	s.Fault("%s expired on all 5 nodes (A is still frozen)", s.Key)

	s.Must(b.Lock())
	show(s, nodes)
	writeAsHolder(s, b, dataB)

	a.Thaw()
	write(s, a, dataA)
	unlock(s, a)
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
	a := s.Client("A", impl, labs.Addrs(cutOff(s, "A", nodes, 3, 4)...))
	b := s.Client("B", impl)

	s.Must(a.Lock()) // nodes 0, 1 and 2: 3 of 5, and token 33 from node 0
	expectToken(s, "A", firstToken)
	show(s, nodes)
	do(s, a, validFor)

	c := nodes[2].Client()
	s.Must(c.PExpire(s.Ctx, s.Key, time.Millisecond).Err())
	s.Fault("node 2's clock jumps ahead, past the key's expiry (modeled: PEXPIRE %s 1 on node 2)", s.Key)
	waitGone(s, nodes[2])
	show(s, nodes)

	got, err := b.TryLock()
	s.Must(err)
	if !got {
		s.T().Fatalf("lab09: B did not get the lock after node 2's jump, so this run shows nothing about fencing")
	}
	show(s, nodes)
	writeAsHolder(s, b, dataB)
	do(s, a, validFor) // A still holds the lock, by its own clock
	write(s, a, dataA)
	s.Must(b.Unlock())
	s.Must(a.Unlock())
	showRow(s, b)
	checkTokensIncrease(s)
}

// The lab's view of the five nodes, as in lab 08.

// show notes, node by node, whose owner value the lock's key holds: "a1"
// for A's first lock, "-" for no key, "down" for a node that does not
// answer.
func show(s *labs.Scene, nodes []*rig.Node) {
	vals := make([]string, len(nodes))
	for i, n := range nodes {
		vals[i] = valueOn(s, n, s.Key)
	}
	s.Note("%s on nodes 0-%d: %s", s.Key, len(nodes)-1, strings.Join(vals, " "))
}

// valueOn returns key's value on node, "-" when it is absent or "down"
// when the node does not answer, on a connection of its own.
func valueOn(s *labs.Scene, node *rig.Node, key string) string {
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

// waitGone waits until the lock's key is gone from every one of nodes.
func waitGone(s *labs.Scene, nodes ...*rig.Node) {
	s.Eventually(s.Key+" is gone from the nodes", func() (bool, error) {
		for _, n := range nodes {
			if valueOn(s, n, s.Key) != "-" {
				return false, nil
			}
		}
		return true, nil
	})
}

// cutOff returns the addresses a client cut off from nodes cut should use:
// the other nodes directly, and for each cut node a fault proxy that
// resets every connection, as a partition that rejects traffic does.
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
