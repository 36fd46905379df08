package lab01_test

import (
	"testing"
	"time"

	"github.com/locklab/locklab/correct"
	"github.com/locklab/locklab/labs"
	lab01 "github.com/locklab/locklab/labs/01-setnx-expire"
	"github.com/locklab/locklab/naive"
)

func TestMain(m *testing.M) { labs.Main(m) }

const title = "Lab 01 (SETNX then EXPIRE)"

var (
	setnxThenExpire = labs.Register("lab01-setnx-then-expire", func(e *labs.Env) labs.Locker {
		return naive.NewSetNXThenExpire(e.Redis(0), e.Key, naive.WithTTL(e.TTL), naive.WithHook(e.Hook))
	})
	setNXPX = labs.Register("lab01-correct", func(e *labs.Env) labs.Locker {
		return correct.New(e.Redis(0), e.Key, correct.WithTTL(e.TTL), correct.WithHook(e.Hook))
	})
	exercise = labs.Register("lab01-exercise", func(e *labs.Env) labs.Locker {
		return lab01.NewExercise(e.Redis(0), e.Key, e.TTL, e.Hook)
	})
)

// crashAfterAcquire: A takes the lock and its process dies at once; B then
// waits for the lock, as long as five leases.
func crashAfterAcquire(s *labs.Scene, impl *labs.Impl) {
	s.TTL = 150 * time.Millisecond
	a := s.Process("A", impl) // a real process, so it can really die
	b := s.Client("B", impl)

	// A dies right after taking the lock: for SETNX+EXPIRE that is between
	// the two commands; a lock taken in one command has no such point, so
	// A dies once Lock returns.
	a.ParkAt(naive.HookAfterSetNX)
	lock := a.Go("lock", "")
	if _, parked := a.WaitParkedOr(lock, naive.HookAfterSetNX); !parked {
		s.Must(lock.Err())
	}
	a.Kill()

	pttl, err := s.Redis().PTTL(s.Ctx, s.Key).Result()
	s.Must(err)
	if pttl < 0 {
		s.Note("PTTL %s = %d: the key has no expiry", s.Key, pttl)
	} else {
		s.Note("PTTL %s = %d ms", s.Key, pttl.Milliseconds())
	}

	wait := 5 * s.TTL
	if err := b.LockWithin(wait); err != nil {
		s.Violation("B waited %v (5 leases) and never got %s: A died holding it and the key never expires", wait, s.Key)
		return
	}
	b.Enter()
	b.Exit()
	s.Must(b.Unlock())
}

func TestLab01_BrokenCrashLeavesEternalLock(t *testing.T) {
	labs.Broken(t, title, crashAfterAcquire, setnxThenExpire)
}

func TestLab01_FixedLockExpiresAfterCrash(t *testing.T) {
	labs.Fixed(t, title, crashAfterAcquire, setNXPX)
}

func TestLab01_Exercise(t *testing.T) {
	labs.Exercise(t, title, crashAfterAcquire, exercise)
}
