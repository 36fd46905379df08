package lab07_test

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locklab/locklab/correct"
	"github.com/locklab/locklab/internal/rig"
	"github.com/locklab/locklab/labs"
	lab07 "github.com/locklab/locklab/labs/07-failover"
)

func TestMain(m *testing.M) { labs.Main(m) }

const (
	title         = "Lab 07 (failover)"
	titleLimit    = "Lab 07 (failover, the limit of WAIT)"
	titleSentinel = "Lab 07 (failover by Sentinel)"
)

const (
	// lease is the lock's TTL. It is far longer than any failover here
	// (Sentinel's takes about 3 s), so A's lock is still valid, by A's own
	// clock, when B is handed the same lock: the double holding is the
	// failover's doing, not an expired lease.
	lease = 30 * time.Second
	// waitTimeout is how long WAIT may wait for a replica's ack. A healthy
	// replica on loopback acks within a few ms, so 1 s is a wide margin;
	// when no ack can come, each acquisition costs this long.
	waitTimeout = time.Second
	// lockWait bounds each Lock: a lock that keeps retrying a SET no
	// replica acknowledges gives up after a few tries.
	lockWait = 5 * waitTimeout
)

var (
	// The broken lock: the correct single-node lock, which trusts the
	// primary's OK (labs.Correct, package correct's Mutex).
	plainLock = labs.Correct
	// The mitigation: the same lock, whose SET counts only once a replica
	// acknowledged it (SET, then WAIT 1 1000 on the same connection).
	waitLock = labs.Register("lab07-wait", func(e *labs.Env) labs.Locker {
		return correct.New(lab07.WaitForReplicas(e.Redis(0), 1, waitTimeout), e.Key, correct.WithTTL(e.TTL))
	})
	exercise = labs.Register("lab07-exercise", func(e *labs.Env) labs.Locker {
		return lab07.NewExercise(e.Redis(0), e.Key, e.TTL)
	})

	_ = labs.RegisterError(lab07.ErrNotReplicated, fmt.Sprintf("no replica acknowledged the SET within %v (WAIT)", waitTimeout))
	_ = labs.RegisterError(syscall.ECONNREFUSED, "connection refused")
)

// byHand is the incident with the failover done by hand, as Sentinel would
// do it: quick, and the default.
func byHand(s *labs.Scene, impl *labs.Impl) { incident(s, impl, false, false) }

// bySentinel is the incident with a real automatic failover by three
// sentinels.
func bySentinel(s *labs.Scene, impl *labs.Impl) { incident(s, impl, true, false) }

// checked is the exercise's check: the incident by hand, where a lock that
// takes the key while no replica has it is a violation in itself, named
// before the failover shows what it costs.
func checked(s *labs.Scene, impl *labs.Impl) { incident(s, impl, false, true) }

// incident: A takes the lock for order 1001 on the primary while
// replication is held back; the primary dies with the key; a replica that
// never saw it is promoted; B asks the new primary for the same lock.
func incident(s *labs.Scene, impl *labs.Impl, withSentinel, strict bool) {
	s.TTL = lease
	c := newCluster(s)
	var sentinels *rig.Sentinels
	if withSentinel {
		sentinels = c.watch()
	}

	// A, a refund worker, has been up for a while: its connections to the
	// primary are open, and the replicas have every write made before.
	a := s.Client("A", impl, labs.Addrs(c.Primary.Addr()))
	a.MustDo(labs.Connect, "")
	s.InSync(c.Primary, 2)

	// The replicas fall behind: a write reaches the primary and goes no
	// further. (On a healthy network that window is a millisecond or so;
	// a primary that dies in it loses the write just the same.)
	c.HoldBack(0, 1)

	// A takes the lock on the primary and starts work.
	waits := waitCalls(s, c.Primary) // the harness's own WAITs, before A's
	held := lock(s, a)
	c.show(c.all()...)
	if strict && held && !c.has(c.Replicas[0]) && !c.has(c.Replicas[1]) {
		s.Violation("A holds the lock, but no replica has its key (replication is held back): %s", whyUnacked(s, c.Primary, waits))
	}
	if held {
		a.Enter()
		a.MustDo(labs.ValidFor, "")
	} else if c.has(c.Primary) {
		s.Violation("A was refused the lock, but its key stays on the primary: nobody else can take it for %v", s.TTL)
	} else if strict {
		refusedAsError(s, c, a)
	}

	// The primary's host dies, and a replica takes over.
	var primary, replica *rig.Node
	if withSentinel {
		primary, replica = c.failoverBySentinel(sentinels)
	} else {
		primary, replica = c.failoverByHand()
	}
	c.show(labs.Member{Name: "new primary", Node: primary}, labs.Member{Name: "replica", Node: replica})

	// B, another worker, is asked to refund order 1001 too, and asks the
	// new primary for the lock.
	b := s.Client("B", impl, labs.Addrs(primary.Addr()))
	if !lock(s, b) {
		s.Violation("B could not get the lock from the new primary, whose replica is in sync: after a failover the lock must work again")
		return
	}
	b.Enter()
	if held {
		a.MustDo(labs.ValidFor, "") // A still holds the lock, by its own clock
	}
	b.Write("refund order 1001")
	b.Exit()
	s.Must(b.Unlock())

	// A's payment call returns, and A finishes.
	if held {
		a.Write("refund order 1001")
		a.Exit()
		a.ReleaseAfterFault() // its primary is gone
	}
}

// refusedAsError: A, refused the lock while no replica acknowledges,
// tries once more. The key is free, so TryLock must not answer (false,
// nil), which says another client holds the lock: a SET no replica
// acknowledged is an error, which Lock returns at once instead of trying
// on until its context ends, and the caller learns why.
func refusedAsError(s *labs.Scene, c *cluster, a *labs.Client) {
	ok, err := a.TryLock()
	switch {
	case labs.IsGone(err):
		s.Must(err)
	case ok:
		a.ReleaseAfterFault()
	case err == nil:
		s.Violation("A's TryLock answered (false, nil) while the key was free and no replica acknowledged A's SET: (false, nil) says another client holds the lock. A SET no replica acknowledged is an error: return it, so that Lock stops and its caller learns why, instead of waiting on for a lock nobody holds")
	}
	if c.has(c.Primary) {
		s.Violation("A's second try was refused, but its key stays on the primary: nobody else can take it for %v", s.TTL)
	}
}

// whyUnacked says why A's SET counted though no replica acknowledged it,
// from what the primary saw: no WAIT since the harness's own (waits, see
// [waitCalls]); a WAIT on another connection than the SET's (the SET's
// connection sent nothing after it, so its last command in CLIENT LIST is
// still the SET); or a WAIT on the SET's connection whose count of acks
// was not checked.
func whyUnacked(s *labs.Scene, primary *rig.Node, waits int) string {
	r := primary.Client()
	defer r.Close()
	list, err := r.ClientList(s.Ctx).Result()
	s.Must(err)
	switch {
	case waitCalls(s, primary) == waits:
		return "A's SET counted with no WAIT sent at all. Send WAIT 1 on the SET's connection after it, and count its acks"
	case strings.Contains(list, " cmd=set "):
		return "A's SET counted without a replica's ack. WAIT counts the acks for the writes sent on its own connection, and A's went on another connection than the SET's: send it on the SET's"
	default:
		return "A sent WAIT on the SET's connection, and WAIT answered 0 replicas (it waits at most its timeout, then answers the count, not an error), yet A took the lock: WAIT's count was ignored. A count below 1 must refuse the lock and take the key back"
	}
}

// waitCalls is how many WAIT commands the primary has run
// (INFO commandstats).
func waitCalls(s *labs.Scene, primary *rig.Node) int {
	r := primary.Client()
	defer r.Close()
	stats, err := r.Info(s.Ctx, "commandstats").Result()
	s.Must(err)
	for _, line := range strings.Split(stats, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_wait:calls="); ok {
			n, _ := strconv.Atoi(strings.Split(v, ",")[0])
			return n
		}
	}
	return 0
}

// lock runs Lock in c, waiting at most lockWait, and reports whether it
// got the lock. A refusal is on the timeline; only a client that died
// fails the test.
func lock(s *labs.Scene, c *labs.Client) bool {
	err := c.LockWithin(lockWait)
	if labs.IsGone(err) {
		s.Must(err)
	}
	return err == nil
}

func TestLab07_BrokenFailoverLosesTheLock(t *testing.T) {
	labs.Broken(t, title, byHand, plainLock)
}

func TestLab07_FixedWaitRefusesUnreplicatedLock(t *testing.T) {
	labs.Fixed(t, title, byHand, waitLock)
}

// TestLab07_BrokenSentinelFailover is the incident with a real Sentinel
// failover. It runs only with LOCKLAB_LONG=1 (see requireLong).
func TestLab07_BrokenSentinelFailover(t *testing.T) {
	requireLong(t)
	labs.Broken(t, titleSentinel, bySentinel, plainLock)
}

// TestLab07_FixedSentinelFailoverWithWait is the fixed run with a real
// Sentinel failover. It runs only with LOCKLAB_LONG=1.
func TestLab07_FixedSentinelFailoverWithWait(t *testing.T) {
	requireLong(t)
	labs.Fixed(t, titleSentinel, bySentinel, waitLock)
}

func TestLab07_Exercise(t *testing.T) {
	labs.Exercise(t, title, checked, exercise)
}

// TestLab07_FixedChecked proves the exercise's check passable.
func TestLab07_FixedChecked(t *testing.T) {
	labs.Safe(t, title, checked, waitLock)
}
