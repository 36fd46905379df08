package labs

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/internal/history"
	"github.com/locklab/locklab/internal/rig"
)

// The scene's views of the servers: what the lock's key holds, who wrote
// it, and the faults done to the nodes. The helpers that show something
// record it on the timeline; the others only read.

// Value returns what the lock's key holds on the first node, or "" when
// there is no key.
func (s *Scene) Value() string {
	s.t.Helper()
	v, err := s.Redis().Get(s.Ctx, s.Key).Result()
	if errors.Is(err, redis.Nil) {
		return ""
	}
	s.Must(err)
	return v
}

// PTTL returns the lock key's PTTL on the first node in milliseconds, as
// Redis reports it: -2 when there is no key, -1 when it has no expiry.
// (go-redis's PTTL turns both into small negative durations; this does
// not.)
func (s *Scene) PTTL() int64 {
	s.t.Helper()
	ms, err := s.Redis().Do(s.Ctx, "PTTL", s.Key).Int64()
	s.Must(err)
	return ms
}

// Owner returns the client whose lock was acquired with the random token
// tok, or "" when no client's was.
func (s *Scene) Owner(tok string) string {
	if tok == "" {
		return ""
	}
	for _, e := range s.Events() {
		if e.Kind == history.Acquire && e.OK && e.Token == tok {
			return e.Client
		}
	}
	return ""
}

// EventsOf counts the events in a client's lane.
func (s *Scene) EventsOf(client string) int {
	n := 0
	for _, e := range s.Events() {
		if e.Client == client {
			n++
		}
	}
	return n
}

// Unlocking runs release, c's unlock (c.Unlock, or the end of an unlock
// already under way), and, when the key held another client's lock, notes
// what became of that lock: deleted or left alone. "Not held" is a fine
// answer (it is on c's lane); any other error fails the test. Two answers
// are violations: an unlock that leaves c's own lock in the key (a release
// that releases nothing keeps everyone out for a lease), and one that says
// "released" when the key held another client's lock (Unlock must say
// "not held" then).
func (s *Scene) Unlocking(c *Client, release func() error) {
	s.t.Helper()
	before := s.Value()
	// Another's lock is read on the server's own account of the key
	// (keyspace notifications): a value compare cannot see a key deleted
	// and written back with the same token.
	var watch *keyWatch
	if o := s.Owner(before); before != "" && o != "" && o != c.Name() {
		watch = s.watchKey(s.Key)
	}
	err := release()
	if err != nil && !NotHeld(err) {
		s.Must(err)
	}
	owner := s.Owner(before)
	after := s.Value()
	switch {
	case before == "":
	case owner == c.Name():
		if after == before {
			s.Violation("%s's Unlock left its own lock (%s) in %s: a release that deletes nothing keeps everyone out until the lease runs out", c.Name(), before, s.Key)
		}
	case after == "":
		s.Note("%s's unlock deleted %s's lock (%s)", c.Name(), owner, before)
	case watch != nil && !watch.leftAlone(owner+"'s lock", c.Name()+"'s Unlock"):
		// Deleted and written back, or renewed: the violation names it.
	default:
		s.Note("%s's lock (%s) left alone", owner, after)
		if err == nil {
			s.Violation("%s's Unlock said it released the lock, but %s held %s's lock (%s): Unlock must return ErrNotHeld when the lock is not its own", c.Name(), s.Key, owner, before)
		}
	}
}

// Latecomer is the end of a scenario in which a holder's lock must have
// survived someone else's late release (labs 03 and 04, [StallInRelease]):
// while holder is inside its critical section, c tries once for the lock
// and must find it held. Then holder leaves and releases, and so does c if
// it got in; both releases are checked as [Scene.Unlocking] checks them.
func (s *Scene) Latecomer(c, holder *Client) {
	s.t.Helper()
	gotC, err := c.TryLock()
	s.Must(err)
	if gotC {
		c.Enter()
	}
	holder.Exit()
	s.Unlocking(holder, holder.Unlock)
	if gotC {
		c.Exit()
		s.Unlocking(c, c.Unlock)
	}
}

// HolderWrites runs op, a write of data to the protected resource, on c,
// which holds the lock. The resource (named resource on the timeline: "the
// store") must accept it: op must answer "accepted". One that refuses the
// holder's write is safe only because it is useless, and that is a
// violation.
func (s *Scene) HolderWrites(c *Client, op, data, resource string) {
	s.t.Helper()
	if c.MustDo(op, data) != "accepted" {
		s.Violation("%s refused %s's write: %s holds the lock", resource, c.Name(), c.Name())
	}
}

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

// ValuesOn returns the lock key's value on each of nodes (see
// [Scene.ValueOn]).
func (s *Scene) ValuesOn(nodes []*rig.Node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = s.ValueOn(n, s.Key)
	}
	return out
}

// ShowNodes notes, node by node, whose token the lock's key holds: "a1"
// for A's first lock, "-" for no key, "down" for a node that does not
// answer.
func (s *Scene) ShowNodes(nodes []*rig.Node) {
	s.Note("%s on nodes 0-%d: %s", s.Key, len(nodes)-1, strings.Join(s.ValuesOn(nodes), " "))
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

// WaitExpiredOn waits until the lock's key is gone from every one of nodes
// ([Scene.WaitGone]) and records that it expired on all of them, with
// meanwhile, what else is true by then, in parentheses ("A is still
// frozen").
func (s *Scene) WaitExpiredOn(nodes []*rig.Node, meanwhile string) {
	s.t.Helper()
	s.WaitGone(nodes...)
	s.Fault("%s expired on all %d nodes (%s)", s.Key, len(nodes), meanwhile)
}

// Server is a server process the scene can crash: a redis-server
// ([rig.Node]), an etcd member, a ZooKeeper or PostgreSQL server.
type Server interface {
	Pid() int
	Kill() error
}

// KillNode crashes a server with SIGKILL, as a power cut does, and says so
// on the timeline: "kill -9 <name> (pid N)". It loses everything not on
// disk.
func (s *Scene) KillNode(name string, node Server) {
	s.t.Helper()
	pid := node.Pid()
	s.Must(node.Kill())
	s.Fault("kill -9 %s (pid %d)", name, pid)
}

// JumpClock models node i's clock jumping ahead past the lock key's
// expiry: PEXPIRE key 1 on that node has exactly that effect on the key
// (a real clock shift of one redis-server is not available). It says so
// on the timeline, waits until the key is gone there, and shows the nodes.
func (s *Scene) JumpClock(nodes []*rig.Node, i int) {
	s.t.Helper()
	c := nodes[i].Client()
	s.Must(c.PExpire(s.Ctx, s.Key, time.Millisecond).Err())
	s.Fault("node %d's clock jumps ahead, past the key's expiry (modeled: PEXPIRE %s 1 on node %d)", i, s.Key, i)
	s.WaitGone(nodes[i])
	s.ShowNodes(nodes)
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
