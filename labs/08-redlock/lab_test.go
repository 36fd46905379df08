package lab08_test

import (
	"testing"
	"time"

	"github.com/locklab/locklab/internal/rig"
	"github.com/locklab/locklab/labs"
	lab08 "github.com/locklab/locklab/labs/08-redlock"
)

func TestMain(m *testing.M) { labs.Main(m) }

const (
	titleNodesDie = "Lab 08 (Redlock, two nodes die)"
	titleRestart  = "Lab 08 (Redlock, a node restarts)"
	titlePaused   = "Lab 08 (Redlock, holder paused)"
	titleClock    = "Lab 08 (Redlock, clock jump, modeled)"
	titleAcquire  = "Lab 08 (Redlock, pause inside Lock)"
)

const (
	// lease is the TTL where nothing waits for a lock to expire. It is far
	// longer than any step here, so when B gets the lock, A's lock is
	// still valid by A's own clock: the double holding is the fault's
	// doing, not an expired lease.
	lease = 10 * time.Second
	// shortLease is the TTL where the lesson is a lock that expires under
	// a frozen client: the scenario waits for the keys to be gone (about
	// this long). At 1s, every elapsed time the timeline prints is in
	// seconds.
	shortLease = time.Second
	// order is what the protected work does.
	order = "ship order 1001"
)

// redlockImpl is package redlock on the scene's five nodes (labs.Redlock:
// a per-node timeout of half the TTL, so that a busy test machine never
// makes a live node look dead; killed and cut-off nodes fail at once
// anyway).
var redlockImpl = labs.Redlock

var (
	exercise = labs.Register("lab08-exercise", func(e *labs.Env) labs.Locker {
		return lab08.NewExercise(e.RedisAll(), e.Key, e.TTL, e.Hook)
	})
	_ = labs.RegisterError(lab08.ErrNotHeld, labs.LabelNotHeld)
)

// twoNodesDie: A holds the lock on all five nodes; two of them die; B
// asks for the lock while A works, and again once A is done.
func twoNodesDie(s *labs.Scene, impl *labs.Impl) {
	s.TTL = lease
	s.RequireControl() // kills, restarts or cuts off servers
	nodes := s.Nodes(5)
	a, b := s.Client("A", impl), s.Client("B", impl)

	s.Must(a.Lock())
	s.ShowNodes(nodes)
	a.Enter()
	a.MustDo(labs.ValidFor, "")

	killNode(s, nodes, 0)
	killNode(s, nodes, 1)
	s.ShowNodes(nodes)
	got := tryLock(s, b) // 3 live nodes, all A's: no majority for B
	if got {
		work(s, b)
	}

	a.Write(order)
	a.Exit()
	s.Must(a.Unlock()) // on the 3 nodes left, a majority
	s.ShowNodes(nodes)
	if !got {
		s.Must(b.Lock()) // 3 of 5 nodes: still a majority
		s.ShowNodes(nodes)
		work(s, b)
	}
}

// restartPolicy is what happens to a crashed node.
type restartPolicy int

const (
	restartEmpty   restartPolicy = iota // at once, without its data (no persistence)
	restartFromAOF                      // at once, from its AOF (appendfsync always)
	restartDelayed                      // without its data, but only once every lock it held is over
)

// aHoldsThreeOfFive starts five nodes (with opts) and two clients: A, cut
// off from nodes 3 and 4, and B. A takes the lock on nodes 0, 1 and 2, a
// majority of 3, enters, and notes how long its lock is valid for. The
// scenario then kills, restarts or cuts off servers (it requires control
// of them).
func aHoldsThreeOfFive(s *labs.Scene, impl *labs.Impl, opts ...rig.Option) (nodes []*rig.Node, a, b *labs.Client) {
	s.RequireControl() // kills, restarts or cuts off servers
	nodes = s.Nodes(5, opts...)
	a = s.Client("A", impl, labs.Addrs(s.CutOff("A", nodes, 3, 4)...))
	b = s.Client("B", impl)

	s.Must(a.Lock()) // nodes 0, 1 and 2: 3 of 5
	s.ShowNodes(nodes)
	a.Enter()
	a.MustDo(labs.ValidFor, "")
	return nodes, a, b
}

// crashedNode: A, cut off from nodes 3 and 4, takes the lock on nodes 0, 1
// and 2, a bare majority. Node 2 crashes and comes back as policy says. B,
// which reaches every node, asks for the lock while A works, and again
// once A is done.
func crashedNode(policy restartPolicy) labs.Scenario {
	return func(s *labs.Scene, impl *labs.Impl) {
		s.TTL = lease
		var opts []rig.Option
		if policy == restartFromAOF {
			opts = append(opts, rig.WithAOF())
		}
		nodes, a, b := aHoldsThreeOfFive(s, impl, opts...)

		survivors := nodes[:2]
		before := s.ValuesOn(survivors)
		killNode(s, nodes, 2)
		switch policy {
		case restartEmpty:
			s.Must(nodes[2].Restart(s.Ctx, false))
			s.Fault("node 2 restarted at once, empty (no persistence)")
		case restartFromAOF:
			s.Must(nodes[2].Restart(s.Ctx, true))
			s.Fault("node 2 restarted at once, from its AOF (appendfsync always)")
		case restartDelayed:
			s.Note("node 2 stays down until every lock it may have held is over (delayed restart)")
		}
		s.ShowNodes(nodes)
		got := tryLock(s, b)
		if got {
			s.ShowNodes(nodes)
			b.Enter()
			a.MustDo(labs.ValidFor, "") // A still holds the lock, by its own clock
			b.Write(order)
			b.Exit()
			s.Must(b.Unlock())
		}

		a.Write(order)
		a.Exit()
		a.ReleaseAfterFault() // with node 2 down, A reaches only nodes 0 and 1: no majority to confirm it
		if policy == restartDelayed {
			// The rule is "down for at least the longest TTL": then every
			// lock the node took part in has ended. Here that moment is
			// waited for as what it stands for: the keys that held A's
			// lock on the surviving nodes are gone.
			waitChanged(s, survivors, before)
			s.ShowNodes(nodes)
			s.Must(nodes[2].Restart(s.Ctx, false))
			s.Fault("node 2 restarted, empty, now that A's lock is over")
		}
		if !got {
			s.Must(b.Lock())
			s.ShowNodes(nodes)
			work(s, b)
		}
	}
}

// Part 1: what Redlock is for.

func TestLab08_FixedTwoNodesDie(t *testing.T) {
	labs.Fixed(t, titleNodesDie, twoNodesDie, redlockImpl)
}

// (a) A node that forgets: restarted without its data.

func TestLab08_BrokenRestartWithoutPersistence(t *testing.T) {
	labs.Broken(t, titleRestart, crashedNode(restartEmpty), redlockImpl)
}

func TestLab08_FixedRestartFromAOF(t *testing.T) {
	labs.Fixed(t, titleRestart, crashedNode(restartFromAOF), redlockImpl)
}

func TestLab08_FixedDelayedRestart(t *testing.T) {
	labs.Fixed(t, titleRestart, crashedNode(restartDelayed), redlockImpl)
}
