package lab08_test

import (
	"testing"
	"time"

	"github.com/locklab/locklab/internal/history"
	"github.com/locklab/locklab/labs"
	"github.com/locklab/locklab/redlock"
)

// The pause inside Lock, explored. pauseInsideLock and pauseDuringSets
// each force one ordering: A frozen at one point of its TryLock, B in
// while A is frozen, then A. pauseRace orders the same steps every way:
// A tries for the lock on the five nodes (and, if it got it, ships the
// order and releases); A's process may freeze (the event "pause") at
// either point of its TryLock where the lesson stops it, while its SETs
// are out (before the fifth) or once a majority has said OK, until its
// keys have expired on every node; B tries for the lock at any moment
// and, if it got it, ships and releases. Whatever the order, no two
// clients may be inside at once, and a TryLock that A was frozen in
// longer than the TTL must not say the lock is A's. (B's steps, and
// everyone's Unlock, run without stopping: the race is A's TryLock.)
func pauseRace(points ...string) labs.Race {
	return labs.Race{
		Nodes:  5,
		Points: points,
		Ops:    []string{"trylock"},
		Actors: func(s *labs.Scene, impl *labs.Impl) []*labs.Actor {
			s.TTL = exploredLease
			nodes := s.Nodes(5)
			a := s.Client("A", impl)
			b := s.Client("B", impl, labs.TTL(lease))
			aa := s.Actor(a, "trylock+enter+write "+order+"+exit", "unlock")
			paused := false
			pause := s.Event("pause", func() bool {
				return !paused && aa.Next() == "trylock" && aa.At() != ""
			}, func() {
				paused = true
				pausedAt[s] = aa.At()
				// A's SETs already sent land while A is frozen (on the
				// nodes B does not hold); then the freeze lasts until every
				// node has let A's key expire.
				taken := func(notB bool) int {
					n := 0
					for _, v := range s.ValuesOn(nodes) {
						if v != "-" && !(notB && s.Owner(v) == "B") {
							n++
						}
					}
					return n
				}
				s.EventuallyWithin(time.Second, "A's SETs on the wire have landed", func() (bool, error) {
					return taken(false) >= len(nodes)/2+1, nil
				})
				s.Fault("A's process frozen inside its TryLock (%s)", where(aa.At()))
				s.WaitFor("A's keys are gone", func() (bool, error) { return taken(true) == 0, nil },
					"A's keys expired on every node (A is still frozen)")
			})
			s.T().Cleanup(func() { delete(pausedAt, s) })
			return []*labs.Actor{
				aa,
				pause,
				s.Actor(b, "trylock+enter+write "+order, "exit+unlock").Unparked(),
			}
		},
		Final: func(s *labs.Scene, actors []*labs.Actor) {
			at, ok := pausedAt[s]
			if !ok {
				return
			}
			frozen := false
			for _, e := range s.Events() {
				switch {
				case e.Kind == history.Fault:
					frozen = true
				case frozen && e.Client == "A" && e.Kind == history.Acquire && e.OK:
					s.Violation("A's TryLock said the lock is A's, though A was frozen inside it (%s) until its keys had expired on every node, longer than the %v TTL: the time Lock took, counted from before the first SET went out, must come off the validity", where(at), exploredLease)
					return
				}
			}
		},
	}
}

// pausedAt is where A was frozen, per schedule's scene.
var pausedAt = map[*labs.Scene]string{}

// where names a point of the exercise's TryLock.
func where(point string) string {
	if point == labs.Command(5) {
		return "its SETs out, before the fifth"
	}
	return "after a majority said OK"
}

// exploredLease is the TTL in the explored race: a pause lasts until it
// has run out, in real time, so that a Lock that measures itself sees it;
// long enough that A, stopped at a point while B takes its turns on a
// loaded machine, still has validity left when nothing froze it.
const exploredLease = 400 * time.Millisecond

var (
	// pauseExplored stops clients before their fifth Redis command (the
	// exercise's fifth SET: its Lock waits for every node) and once a
	// majority has said OK.
	pauseExplored = pauseRace(labs.Command(5), redlock.HookAcquiredQuorum)
	// quorumExplored stops them at the majority only: package redlock's
	// Lock returns once a majority has answered, its other SETs still on
	// the wire, so a client stopped before its fifth SET would stop a
	// second time at the majority, at once.
	quorumExplored = pauseRace(redlock.HookAcquiredQuorum)
	exploreOpts    = labs.ExploreOpts{Budget: 300}
)

func TestLab08_FixedPauseInsideLockExplored(t *testing.T) {
	labs.ExploreFixed(t, titleAcquire, quorumExplored, redlockImpl, exploreOpts)
}

func TestLab08_ExerciseExplored(t *testing.T) {
	labs.ExploreExercise(t, titleAcquire, pauseExplored, exercise, exploreOpts)
}
