package lab03_test

import (
	"testing"
	"time"

	"github.com/locklab/locklab/labs"
	lab03 "github.com/locklab/locklab/labs/03-blind-delete"
	"github.com/locklab/locklab/naive"
)

func TestMain(m *testing.M) { labs.Main(m) }

const title = "Lab 03 (blind DEL)"

var (
	blindDelete  = labs.BlindDelete
	tokenChecked = labs.Correct
	exercise     = labs.Register("lab03-exercise", labs.OnKey(lab03.NewExercise))
	_            = labs.RegisterError(lab03.ErrNotHeld, labs.LabelNotHeld)
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

// pausedHolder: A finishes its work on order 1001, and its process stalls
// before it can release the lock (a long GC pause, a VM frozen for a live
// migration). The lease runs out, B takes the lock, and then A wakes up
// and releases what it still believes is its lock. C arrives last.
func pausedHolder(s *labs.Scene, impl *labs.Impl) {
	s.TTL = leaseA
	a := s.Process("A", impl) // a real process, so its pause is a real SIGSTOP
	s.TTL = lease
	b, c := s.Client("B", impl), s.Client("C", impl)

	// A works inside its lease...
	s.Must(a.Lock())
	a.Enter()
	a.Exit()
	// ...then freezes, just before its Unlock, for longer than the lease.
	a.Freeze()
	s.WaitExpired(s.Key)

	// B takes the lock and starts its own work.
	s.Must(b.Lock())
	b.Enter()

	// A wakes up and releases "its" lock.
	a.Thaw()
	s.Unlocking(a, a.Unlock)

	// C wants the lock too. It must find B's lock in place.
	s.Latecomer(c, b)
}

func TestLab03_BrokenDeletesOthersLock(t *testing.T) {
	labs.Broken(t, title, pausedHolder, blindDelete)
}

func TestLab03_FixedRefusesForeignDelete(t *testing.T) {
	labs.Fixed(t, title, pausedHolder, tokenChecked)
}

func TestLab03_Exercise(t *testing.T) {
	labs.Exercise(t, title, pausedHolder, exercise)
}

// stallInRelease is the exercise's second check: A's release stalls
// before each of its Redis commands in turn until its lease has run out
// and B holds the lock. A release that checks the token from the client
// (GET, then DEL) has a gap of its own (lab 04), and is caught here.
var stallInRelease = labs.StallInRelease(leaseA, lease)

func TestLab03_ExerciseStallInRelease(t *testing.T) {
	labs.Exercise(t, title, stallInRelease, exercise)
}

// TestLab03_FixedStallInRelease proves the second check passable: the
// owner-checked Lua release has no gap.
func TestLab03_FixedStallInRelease(t *testing.T) {
	labs.Safe(t, title, stallInRelease, tokenChecked)
}

// releaseRace is pausedHolder explored: the orders of A's release (stopped
// before each of its commands after the first), A's lease running out, and
// B's and C's tries (labs.ReleaseRace). A's release stops also where the
// exercise's does, before its delete.
var (
	releaseRace     = labs.ReleaseRace(naive.HookBeforeDel)
	releaseExplored = labs.ExploreOpts{Budget: 600}
)

func TestLab03_BrokenDeletesOthersLockExplored(t *testing.T) {
	labs.ExploreBroken(t, title, releaseRace, blindDelete, releaseExplored)
}

func TestLab03_FixedRefusesForeignDeleteExplored(t *testing.T) {
	labs.ExploreFixed(t, title, releaseRace, tokenChecked, releaseExplored)
}

func TestLab03_ExerciseExplored(t *testing.T) {
	labs.ExploreExercise(t, title, releaseRace, exercise, releaseExplored)
}
