package lab10_test

import (
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/labs"
)

// The exercise's further checks.

// slowSubscribe is lostWakeup with B's SUBSCRIBE slow to reach Redis: it
// arrives only when B starts reading its subscription (labs.SlowSubscribe,
// modeled). A lock that subscribes first but tries before the subscription
// is confirmed is not listening yet when A releases.
func slowSubscribe(s *labs.Scene, impl *labs.Impl) {
	b := s.Client("B", impl, labs.SlowSubscribe())
	s.Fault("network (modeled): B's SUBSCRIBE reaches Redis only when B reads its connection")
	lostWakeupWith(s, impl, b,
		"B slept through A's release: it tried the lock before its SUBSCRIBE had reached Redis, so it was not listening yet when A released, and waited %v for a release that had already happened")
}

// deadHolder: A takes the lock and its process is killed (SIGKILL), so no
// release message ever comes. B wants the lock, as long as five leases:
// it must try again once A's lease has run out, whether or not anyone
// tells it.
//
// B must ask while A's key still stands (a B that asks after the lease ran
// out never waits, and the broken waiter passes): killing A and starting
// B took up to 341 ms on a loaded 2-core machine, so the lease is 1.5 s,
// over 4x that.
func deadHolder(s *labs.Scene, impl *labs.Impl) {
	s.TTL = 1500 * time.Millisecond
	a := s.Process("A", impl) // a real process, so it can really die
	b := s.Client("B", impl)
	s.Must(a.Lock())
	a.Kill() // right after taking the lock, before any work
	wait := 5 * s.TTL
	start := time.Now()
	if err := b.LockWithin(wait); err != nil {
		if labs.IsGone(err) {
			s.Must(err)
		}
		if took := time.Since(start); took < wait-wait/10 {
			// Lock returned before B's wait was up (a wait that ran out
			// returns at wait or later, never before): B gave up.
			s.Violation("B gave up after %v, before its %v (5 leases) were up (Lock returned: %s): A died holding the lock and its %v lease ran out, and B, having waited a lease for a release message, returned instead of trying the lock again",
				took.Round(time.Millisecond), wait, strings.ReplaceAll(err.Error(), "\n", "; "), s.TTL)
			return
		}
		s.Violation("B waited %v (5 leases) and never got the lock: A died holding it, its %v lease ran out, and B waited for a release message that never comes instead of trying again",
			wait, s.TTL)
		return
	}
	b.Enter()
	b.Exit()
	s.Must(b.Unlock())
}

func TestLab10_ExerciseSlowSubscribe(t *testing.T) {
	labs.Exercise(t, lostTitle, slowSubscribe, exercise)
}

func TestLab10_ExerciseDeadHolder(t *testing.T) {
	labs.Exercise(t, deadHolderTitle, deadHolder, exercise)
}

// Redisson's order passes both: subscribe, wait for the confirmation, try;
// and wait at most one lease for a message.
func TestLab10_FixedWakeAllSlowSubscribe(t *testing.T) {
	labs.Safe(t, lostTitle, slowSubscribe, wakeAll)
}

func TestLab10_FixedWakeAllDeadHolder(t *testing.T) {
	labs.Safe(t, deadHolderTitle, deadHolder, wakeAll)
}

func TestLab10_FixedHandOffSlowSubscribe(t *testing.T) {
	labs.Safe(t, lostTitle, slowSubscribe, handOff)
}

func TestLab10_FixedHandOffDeadHolder(t *testing.T) {
	labs.Safe(t, deadHolderTitle, deadHolder, handOff)
}
