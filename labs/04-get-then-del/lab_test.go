package lab04_test

import (
	"testing"
	"time"

	"github.com/locklab/locklab/correct"
	"github.com/locklab/locklab/labs"
	lab04 "github.com/locklab/locklab/labs/04-get-then-del"
	"github.com/locklab/locklab/naive"
)

func TestMain(m *testing.M) { labs.Main(m) }

const title = "Lab 04 (GET then DEL)"

var (
	getThenDelete = labs.GetThenDelete
	luaRelease    = labs.Correct
	// The exercise's client is an ACL user whose Redis refuses scripts
	// (-@scripting), as the story's does.
	exercise = labs.Register("lab04-exercise", func(e *labs.Env) labs.Locker {
		c, err := e.RedisAs(0, "no-scripts", "-@scripting")
		if err != nil {
			return labs.Failing(err)
		}
		return lab04.NewExercise(c, e.Key, e.TTL, e.Hook)
	})
	_ = labs.RegisterError(lab04.ErrNotHeld, labs.LabelNotHeld)
)

// Leases. A's is short, so the lab does not wait long for it to run out.
// B's and C's are long, so that nothing else expires by accident while the
// test drives them, however loaded the machine: B must hold its lock from
// the moment it takes it until C has tried, and on a busy machine running
// the race detector those few steps have taken over 150ms.
const (
	leaseA = 200 * time.Millisecond
	lease  = 2 * time.Second
)

// inTheGap are the points where A stops inside its release: after GET
// showed its own token and before DEL (two commands), or right before the
// one release script. The same script drives both locks.
var inTheGap = []string{naive.HookAfterGetMatch, correct.HookBeforeRelease}

// expiresMidRelease: A finishes its work on order 1001 and releases the
// lock, checking first that the lock is still its own. Between that check
// and the delete, A stalls (a GC pause, a slow network) past its lease; B
// takes the lock. Then A's delete arrives. C comes last.
func expiresMidRelease(s *labs.Scene, impl *labs.Impl) {
	s.TTL = leaseA
	a := s.Client("A", impl)
	s.TTL = lease
	b, c := s.Client("B", impl), s.Client("C", impl)

	s.Must(a.Lock())
	a.Enter()
	a.Exit()

	// A starts its release and stops inside it.
	a.ParkAt(inTheGap...)
	release := a.Go("unlock", "")
	at, parked := a.WaitParkedOr(release, inTheGap...)
	if !parked {
		// The release never reached the point between its check and its
		// delete: say what it did instead of waiting out the deadline.
		if err := release.Err(); err != nil {
			s.Fatalf("A's Unlock failed: %v (and it never reached m.hook(ctx, naive.HookAfterGetMatch), where the lab stalls A between its check and its delete)", err)
		}
		s.Fatalf("A's Unlock returned without calling m.hook(ctx, naive.HookAfterGetMatch), where the lab stalls A between its check and its delete: keep that call in the release, just before the delete, so the lab can show what the delete does after A's lease ran out")
	}
	switch at {
	case naive.HookAfterGetMatch:
		s.Note("A's GET saw %s, its own token; its DEL is not sent yet", s.Value())
	case correct.HookBeforeRelease:
		s.Note("A's release script is not sent yet")
	}

	// A's lease runs out meanwhile, and B takes the lock.
	s.WaitExpired(s.Key)
	s.Must(b.Lock())
	b.Enter()

	// A goes on: what does its release do to B's lock?
	s.Unlocking(a, func() error {
		a.Continue()
		return release.Err()
	})

	// C wants the lock too. It must find B's lock in place.
	s.Latecomer(c, b)
}

func TestLab04_BrokenDeletesAfterCheck(t *testing.T) {
	labs.Broken(t, title, expiresMidRelease, getThenDelete)
}

func TestLab04_FixedLuaReleaseIsAtomic(t *testing.T) {
	labs.Fixed(t, title, expiresMidRelease, luaRelease)
}

func TestLab04_Exercise(t *testing.T) {
	labs.Exercise(t, title, expiresMidRelease, exercise)
}

// stallInRelease is the exercise's second check, as in lab 03: A's
// release stalls before each of its Redis commands in turn, wherever the
// code sends them, until its lease has run out and B holds the lock.
var stallInRelease = labs.StallInRelease(leaseA, lease)

func TestLab04_ExerciseStallInRelease(t *testing.T) {
	labs.Exercise(t, title, stallInRelease, exercise)
}

// TestLab04_FixedStallInRelease proves the second check passable (here
// with the Lua release; a release with WATCH and MULTI/EXEC passes too).
func TestLab04_FixedStallInRelease(t *testing.T) {
	labs.Safe(t, title, stallInRelease, luaRelease)
}

// releaseRace is expiresMidRelease explored: the orders of A's release
// (stopped between its check and its delete, and before each command),
// A's lease running out, and B's and C's tries (labs.ReleaseRace).
var (
	releaseRace     = labs.ReleaseRace(inTheGap...)
	releaseExplored = labs.ExploreOpts{Budget: 600}
)

func TestLab04_BrokenDeletesAfterCheckExplored(t *testing.T) {
	labs.ExploreBroken(t, title, releaseRace, getThenDelete, releaseExplored)
}

func TestLab04_FixedLuaReleaseIsAtomicExplored(t *testing.T) {
	labs.ExploreFixed(t, title, releaseRace, luaRelease, releaseExplored)
}

func TestLab04_ExerciseExplored(t *testing.T) {
	labs.ExploreExercise(t, title, releaseRace, exercise, releaseExplored)
}
