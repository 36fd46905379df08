package lab10_test

import (
	"slices"
	"testing"
	"time"

	"github.com/locklab/locklab/correct"
	"github.com/locklab/locklab/labs"
)

// How soon a waiter gets a released lock. A waiter that listens for the
// release wakes within a millisecond or so; one that sleeps between tries
// (redsync's random 50-250 ms, the README's Black Friday) leaves the lock
// free for most of each sleep, and a sleep long enough to send few
// commands a second also passes the contract's command count.

const (
	// wakeRounds is how many hand-overs are measured; their median is
	// judged, so one slow wake on a loaded machine does not fail a run.
	wakeRounds = 5
	// wakeWithin bounds the median: a release message takes a round
	// trip; a waiter that sleeps even 50 ms between tries is over it.
	wakeWithin = 40 * time.Millisecond
	// wakeWait is how long B is willing to wait for the lock each round.
	wakeWait = 2 * time.Second
)

// wakeDelay: A holds the lock; B's Lock is refused (it parks at
// correct.HookRefused, then goes on to wait); A releases. The time from
// A's Unlock to B's Lock returning is measured, wakeRounds times.
func wakeDelay(s *labs.Scene, impl *labs.Impl) {
	a, b := s.Client("A", impl), s.Client("B", impl)
	var delays []time.Duration
	for range wakeRounds {
		s.Must(a.Lock())
		b.HoldAt(correct.HookRefused)
		call := b.Go("lock", wakeWait.String())
		if _, parked := b.WaitParkedOr(call, correct.HookRefused); !parked {
			s.Violation("B's Lock returned (%v) while A held the lock, without reaching its refused try's hook", call.Err())
			return
		}
		b.Continue()
		released := time.Now()
		s.Must(a.Unlock())
		if !call.Within(wakeWait) {
			s.Violation("B had not got the lock %v after A released it: B slept through the release (was it listening when A released?)", wakeWait)
			return
		}
		delay := time.Since(released)
		if err := call.Err(); err != nil {
			s.Violation("B's Lock returned %v after A released the lock; want nil", err)
			return
		}
		delays = append(delays, delay)
		s.Must(b.Unlock())
	}
	slices.Sort(delays)
	median := delays[len(delays)/2]
	s.Note("B got the lock %v after A's release (median of %d hand-overs; all: %v)", median.Round(time.Millisecond), wakeRounds, delays)
	if median > wakeWithin {
		s.Violation("B got the lock a median %v after A released it (%d hand-overs: %v): B sleeps between tries instead of waking on the release, and the lock sits free for most of each sleep (the README's Black Friday: redsync's random 50-250 ms). Wait for the release message",
			median.Round(time.Millisecond), wakeRounds, roundAll(delays))
	}
}

// roundAll rounds each delay to the millisecond, for a message.
func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}

const wakeTitle = "Lab 10 (how soon a waiter wakes)"

func TestLab10_ExerciseWakeDelay(t *testing.T) {
	labs.Exercise(t, wakeTitle, wakeDelay, exercise)
}

func TestLab10_FixedWakeAllWakeDelay(t *testing.T) {
	labs.Safe(t, wakeTitle, wakeDelay, wakeAll)
}

func TestLab10_FixedHandOffWakeDelay(t *testing.T) {
	labs.Safe(t, wakeTitle, wakeDelay, handOff)
}
