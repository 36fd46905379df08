package lab01_test

import (
	"testing"
	"time"

	"github.com/locklab/locklab/labs"
	lab01 "github.com/locklab/locklab/labs/01-setnx-expire"
	"github.com/locklab/locklab/naive"
)

func TestMain(m *testing.M) { labs.Main(m) }

const title = "Lab 01 (SETNX then EXPIRE)"

var (
	setnxThenExpire = labs.SetNXThenExpire
	setNXPX         = labs.Correct
	exercise        = labs.Register("lab01-exercise", labs.OnKey(lab01.NewExercise))
)

// inTheGap is where A dies in the lab's story: right after SETNX (the hook
// point of a lock taken in two commands). The exercise's check, below,
// kills A at every gap between its commands.
var inTheGap = []string{naive.HookAfterSetNX}

// crashAfterAcquire: A takes the lock and its process dies at once; B then
// waits for the lock, as long as five leases.
func crashAfterAcquire(s *labs.Scene, impl *labs.Impl) {
	s.TTL = lease
	crashAt(s, impl, inTheGap)
}

// lease is the lock's TTL: short, so that B does not wait long for it.
const lease = 150 * time.Millisecond

// crashAnywhere is the exercise's check: A dies at every gap of its Lock in
// turn, before its second Redis command, before its third, ..., and once
// Lock has returned; each time, B must get the lock once the lease is
// over. A lock that leaves its key without a TTL at any instant is caught,
// wherever its code sends its commands.
func crashAnywhere(s *labs.Scene, impl *labs.Impl) {
	s.TTL = lease
	s.Gaps(2, func(k int) bool { return crashAt(s, impl, []string{labs.Command(k)}) })
}

// crashAt is crashAfterAcquire with A dying at the first of points it
// reaches, or once Lock returns; it reports whether A reached one.
func crashAt(s *labs.Scene, impl *labs.Impl, points []string) bool {
	a := s.Process("A", impl) // a real process, so it can really die
	b := s.Client("B", impl)

	// A dies right after taking the lock: for SETNX+EXPIRE that is between
	// the two commands; a lock taken in one command has no such point, so
	// A dies once Lock returns.
	a.ParkAt(points...)
	lock := a.Go("lock", "")
	_, parked := a.WaitParkedOr(lock, points...)
	if !parked {
		s.Must(lock.Err())
	}
	a.Kill()

	pttl0, at := s.PTTL(), time.Now()
	switch pttl0 {
	case -2:
		s.Note("PTTL %s = -2: no key", s.Key)
	case -1:
		s.Note("PTTL %s = -1: the key has no expiry", s.Key)
	default:
		s.Note("PTTL %s = %d ms", s.Key, pttl0)
	}

	wait := 5 * s.TTL
	if err := b.LockWithin(wait); err != nil {
		// The key's TTL now against what was left of it at the crash: more
		// than that, less the time since, means something renewed it (and
		// A is dead); no more means the TTL was only too long to begin with.
		pttl := s.PTTL()
		renewed := pttl0 > 0 && pttl > pttl0-time.Since(at).Milliseconds()+10
		switch {
		case pttl == -1:
			s.Violation("B waited %v (5 leases) and never got %s: A died holding it and the key never expires", wait, s.Key)
		case pttl > 0 && (renewed || pttl0 <= 0):
			s.Violation("B waited %v (5 leases) and never got %s, though the key has a TTL (PTTL %d ms now): A is long dead, so B's own refused tries kept renewing it, a PEXPIRE that runs whether or not SETNX took the key", wait, s.Key, pttl)
		case pttl > 0:
			s.Violation("B waited %v (5 leases) and never got %s: A's key had a TTL of %d ms when A died, longer than the lease of %v the lock was given (PTTL %d ms now, nothing renewed it): give the key the TTL the lock is given, not a longer one", wait, s.Key, pttl0, s.TTL, pttl)
		default:
			s.Violation("B waited %v (5 leases) and never got %s", wait, s.Key)
		}
		return parked
	}
	b.Enter()
	b.Exit()
	s.Must(b.Unlock())
	return parked
}

func TestLab01_BrokenCrashLeavesEternalLock(t *testing.T) {
	labs.Broken(t, title, crashAfterAcquire, setnxThenExpire)
}

func TestLab01_FixedLockExpiresAfterCrash(t *testing.T) {
	labs.Fixed(t, title, crashAfterAcquire, setNXPX)
}

// TestLab01_FixedCrashAnywhere proves the exercise's check passable: one
// SET NX PX has no gap to die in.
func TestLab01_FixedCrashAnywhere(t *testing.T) {
	labs.Safe(t, title, crashAnywhere, setNXPX)
}

func TestLab01_Exercise(t *testing.T) {
	labs.Exercise(t, title, crashAnywhere, exercise)
}

// crashRace is crashAfterAcquire explored: A takes the lock, works and
// releases it, and crashes at any turn (stopped right after SETNX, before
// each of its commands after the first, or between its steps); B tries
// once. At the end, the key must not outlive the lease: no key, or one
// whose TTL is at most the lease.
var crashRace = labs.Race{
	Points:   inTheGap,
	Commands: 3,
	Actors: func(s *labs.Scene, impl *labs.Impl) []*labs.Actor {
		a, b := s.Client("A", impl), s.Client("B", impl)
		actA := s.Actor(a, "trylock+enter+exit", "unlock")
		return []*labs.Actor{actA, s.Crash(actA), s.Actor(b, "trylock+enter", "exit+unlock")}
	},
	Final: func(s *labs.Scene, _ []*labs.Actor) {
		switch pttl := s.PTTL(); {
		case pttl == -1:
			s.Violation("%s has no expiry after A crashed: nobody gets the lock again", s.Key)
		case pttl > s.TTL.Milliseconds():
			s.Violation("%s expires in %d ms after A crashed, longer than the lease of %v the lock was given", s.Key, pttl, s.TTL)
		}
	},
}

var crashExplored = labs.ExploreOpts{Exhaustive: true, Budget: 600}

func TestLab01_BrokenCrashLeavesEternalLockExplored(t *testing.T) {
	labs.ExploreBroken(t, title, crashRace, setnxThenExpire, crashExplored)
}

func TestLab01_FixedLockExpiresAfterCrashExplored(t *testing.T) {
	labs.ExploreFixed(t, title, crashRace, setNXPX, crashExplored)
}

func TestLab01_ExerciseExplored(t *testing.T) {
	labs.ExploreExercise(t, title, crashRace, exercise, crashExplored)
}
