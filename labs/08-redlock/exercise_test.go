package lab08_test

import (
	"testing"
	"time"

	"github.com/locklab/locklab/labs"
	"github.com/locklab/locklab/redlock"
)

// The exercise: a pause inside Lock, which Redlock's validity check
// catches, and which the exercise, a Redlock without that check, does not.

// pauseInsideLock is Kleppmann's pause during acquisition: every node has
// said OK to A, and A's process freezes before it looks at the clock,
// until its keys have expired everywhere. B takes the lock. Then A
// resumes, inside Lock.
func pauseInsideLock(s *labs.Scene, impl *labs.Impl) {
	pauseAt(s, impl, redlock.HookAcquiredQuorum, 5, "%d of 5 nodes said OK to A; A has not looked at the clock yet")
}

// pauseDuringSets is the same pause a moment earlier, while A's SETs are
// out: four nodes have said OK, the SET to the fifth is not sent yet, and
// A freezes until its keys have expired. When it resumes, its fifth SET
// fails and the four OKs make a majority. A Lock that reads the clock when
// the replies are in, not before the first SET went out, sees no time gone
// by.
func pauseDuringSets(s *labs.Scene, impl *labs.Impl) {
	pauseAt(s, impl, labs.Command(5), 4, "%d of 5 nodes said OK to A; its SET to the fifth is not sent yet")
}

// pauseAt freezes A at point inside its TryLock until its keys have
// expired everywhere, lets B take the lock, then resumes A. want is how
// many nodes hold A's token at point once its SETs sent so far have
// landed: package redlock reaches HookAcquiredQuorum as soon as a majority
// has answered, its other SETs still on the wire (A's other goroutines run
// while it is parked), so pauseAt gives them a second to land before it
// counts, and the timeline reads the same on a slow machine.
func pauseAt(s *labs.Scene, impl *labs.Impl, point string, want int, said string) {
	s.TTL = shortLease
	s.RequireControl() // kills, restarts or cuts off servers
	nodes := s.Nodes(5)
	a := s.Process("A", impl)
	b := s.Client("B", impl, labs.TTL(lease))
	a.MustDo(labs.Connect, "")

	a.ParkAt(point)
	try := a.Go("trylock", "")
	a.WaitParked(point)
	holding := func() int {
		n := 0
		for _, v := range s.ValuesOn(nodes) {
			if v != "-" {
				n++
			}
		}
		return n
	}
	s.EventuallyWithin(time.Second, "A's SETs on the wire have landed", func() (bool, error) {
		return holding() >= want, nil
	})
	s.Note(said, holding())
	a.Freeze()
	frozen := time.Now()
	s.WaitExpiredOn(nodes, "A is still frozen")

	s.Must(b.Lock())
	s.ShowNodes(nodes)
	b.Enter()
	b.Write(order)

	a.Thaw()
	a.Continue()
	out, err := try.Result()
	if labs.IsGone(err) {
		s.Must(err)
	}
	if out == "true" { // A believes it holds the lock
		s.Violation("A's TryLock said the lock is A's, though A was frozen inside it for %v, longer than the %v TTL: the time Lock took, counted from before the first SET went out, must come off the validity",
			time.Since(frozen).Round(100*time.Millisecond), s.TTL)
		a.Enter()
		a.Write(order)
		a.Exit()
		a.ReleaseAfterFault()
	}
	b.Exit()
	s.Must(b.Unlock())
}

// A pause inside Lock, which Redlock's validity check does catch; the
// exercise is a Redlock without that check.

func TestLab08_FixedPauseInsideLockIsCaught(t *testing.T) {
	labs.Fixed(t, titleAcquire, pauseInsideLock, redlockImpl)
}

func TestLab08_Exercise(t *testing.T) {
	labs.Exercise(t, titleAcquire, pauseInsideLock, exercise)
}

func TestLab08_ExercisePauseDuringSets(t *testing.T) {
	labs.Exercise(t, titleAcquire, pauseDuringSets, exercise)
}

// There is no fixed run of pauseDuringSets with package redlock: its Lock
// returns once a majority has answered, before the pause, so the pause
// comes after the lock is held, which is part (b). The exercise's Lock
// waits for every node, and the right fix in its table of wrong fixes
// passes this check.
