package lab00_test

import (
	"testing"
	"time"

	"github.com/locklab/locklab/labs"
	lab00 "github.com/locklab/locklab/labs/00-two-instances"
)

func TestMain(m *testing.M) { labs.Main(m) }

const title = "Lab 00 (one job, two instances)"

var (
	// The broken lock: a mutex inside one process.
	processMutex = labs.Register("lab00-process-mutex", func(*labs.Env) labs.Locker {
		return &lab00.ProcessMutex{}
	})
	// The fix: a lock in Redis, which every instance sees (labs.Correct,
	// package correct's Mutex).
	redisLock = labs.Correct
	exercise  = labs.Register("lab00-exercise", func(e *labs.Env) labs.Locker {
		return lab00.NewExercise(e.Redis(0), e.Key, e.TTL)
	})
)

// tryLockWait is how long B's TryLock may take: a TryLock answers at once
// (a millisecond or so here), it never waits for the lock. It is half the
// scene's 2s lease: a TryLock that waits for the lock can have it only when
// A's key expires, 2s after A took it, so it is still waiting when B is
// asked (at a lease equal to the wait, a loaded machine let it answer just
// inside it, and the run failed on the overlap instead).
const tryLockWait = time.Second

// nightlyJob is the incident of the README: the nightly job that charges
// orders runs on every instance of the service, guarded by a lock.
// Instance B's cron fires while instance A is still charging.
func nightlyJob(s *labs.Scene, impl *labs.Impl) {
	a := s.Client("A", impl)  // instance 1: a goroutine of this test process
	b := s.Process("B", impl) // instance 2: another process, as on another machine

	s.Must(a.Lock())
	a.Enter()
	a.Note("charging orders 1001-1050")

	try := b.Go("trylock", "")
	if !try.Within(tryLockWait) {
		s.Violation("B's TryLock has not answered after %v: a TryLock must say at once that the lock is taken, not wait for it", tryLockWait)
	}
	out, err := try.Result()
	s.Must(err)
	if out == "true" { // the lock did not see A: B charges the same orders again
		b.Enter()
		b.Note("charging orders 1001-1050")
		b.Exit()
		s.Must(b.Unlock())
	}

	a.Exit()
	a.Release()
	if v := s.Value(); v != "" {
		s.Violation("A's Unlock returned, but %s is still in Redis (it holds %q, PTTL %d ms): A's Unlock did not release the lock A took, and the next run of the job waits for the lease", s.Key, v, s.PTTL())
	}
}

func TestLab00_BrokenProcessMutex(t *testing.T) {
	labs.Broken(t, title, nightlyJob, processMutex)
}

func TestLab00_FixedRedisLock(t *testing.T) {
	labs.Fixed(t, title, nightlyJob, redisLock)
}

func TestLab00_Exercise(t *testing.T) {
	labs.Exercise(t, title, nightlyJob, exercise)
}
