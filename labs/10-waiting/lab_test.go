package lab10_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/locklab/locklab/correct"
	"github.com/locklab/locklab/labs"
	lab10 "github.com/locklab/locklab/labs/10-waiting"
)

func TestMain(m *testing.M) { labs.Main(m) }

var (
	_ = labs.RegisterError(lab10.ErrNotHeld, labs.LabelNotHeld)
	_ = labs.RegisterError(lab10.ErrNotObtained, "not obtained")
	_ = labs.RegisterError(correct.ErrNotObtained, "not obtained")
)

// The waiting strategies.
var (
	// poll: try SET NX every 5ms.
	poll = labs.Register("lab10-poll", func(e *labs.Env) labs.Locker {
		fixed := func(int) time.Duration { return 5 * time.Millisecond }
		return labs.NewCorrect(e, correct.WithRetry(fixed))
	})
	// backoff: correct's default, jittered exponential backoff 2-64ms.
	backoff = labs.Correct
	// wakeAll: sleep until the holder's release message, then race.
	wakeAll = labs.Register("lab10-wake-all", labs.OnKey(lab10.NewWakeAll))
	// wakeAllLate: the same, subscribing only after a refused try.
	wakeAllLate = labs.Register("lab10-wake-all-late", labs.OnKey(lab10.NewWakeAllLate))
	// handOff: correct with a Notifier: a FIFO queue, the lock handed to
	// the oldest live waiter.
	handOff = labs.Register("lab10-hand-off", func(e *labs.Env) labs.Locker {
		n, err := correct.NewNotifier(context.Background(), e.Redis(0))
		if err != nil {
			panic(err) // the scene's server is up; a failure here is a broken rig
		}
		e.Defer(func() { _ = n.Close() })
		return labs.NewCorrect(e, correct.WithNotifier(n))
	})
	// blindHandOff: hand-off that ignores whether anyone got the message.
	blindHandOff = labs.Register("lab10-blind-hand-off", func(e *labs.Env) labs.Locker {
		m, err := lab10.NewBlindHandoff(context.Background(), e.Redis(0), e.Key, e.TTL, e.Hook)
		if err != nil {
			panic(err)
		}
		e.Defer(func() { _ = m.Close() })
		return m
	})
	exercise = labs.Register("lab10-exercise", labs.OnKey(lab10.NewExercise))
)

const (
	lostTitle       = "Lab 10 (the lost wake-up)"
	deadTitle       = "Lab 10 (a dead waiter)"
	deadHolderTitle = "Lab 10 (a dead holder)"
)

// lostWakeup: A holds the lock. B tries, is refused, and before it starts
// listening for A's release, A releases. Does B get the lock?
func lostWakeup(s *labs.Scene, impl *labs.Impl) {
	lostWakeupWith(s, impl, s.Client("B", impl),
		"B slept through A's release: it was refused, started listening only after A had released, and waited %v for a release that had already happened")
}

// lostWakeupWith is lostWakeup with client b as B, and slept as the
// violation's sentence (a format for how long B waited).
func lostWakeupWith(s *labs.Scene, impl *labs.Impl, b *labs.Client, slept string) {
	a := s.Client("A", impl)
	s.Must(a.Lock())
	a.Enter()
	a.Exit()

	b.ParkAt(correct.HookRefused)
	wait := time.Second
	call := b.Go("lock", wait.String())
	b.WaitParked(correct.HookRefused) // refused, not yet listening
	s.Must(a.Unlock())                // the release happens in the window
	b.Continue()

	if err := call.Err(); err != nil {
		s.Violation(slept, wait)
		return
	}
	b.Enter()
	b.Exit()
	s.Must(b.Unlock())
}

func TestLab10_BrokenLostWakeup(t *testing.T)  { labs.Broken(t, lostTitle, lostWakeup, wakeAllLate) }
func TestLab10_FixedNoLostWakeup(t *testing.T) { labs.Fixed(t, lostTitle, lostWakeup, handOff) }
func TestLab10_Exercise(t *testing.T)          { labs.Exercise(t, lostTitle, lostWakeup, exercise) }

// TestLab10_FixedWakeAllSubscribesFirst: Redisson's order (subscribe, then
// try) closes the window too.
func TestLab10_FixedWakeAllSubscribesFirst(t *testing.T) {
	labs.Fixed(t, lostTitle, lostWakeup, wakeAll)
}

// holderLease is A's lease in deadWaiter, far longer than the scene's.
const holderLease = 30 * time.Second

// deadWaiter: A holds the lock; W queues, then W's process is killed; C
// queues behind W. A releases. Does C get the lock, or does it sit with the
// dead W?
//
// A's lease is long: the scene waits for W's process to queue and die
// while A holds the lock, which on a loaded machine can take longer than
// the waiters' 300 ms (TestLab10_FixedDeadWaiterSkipped failed once in CI
// with the scene's lease for everyone; A's lock running out first would
// let C in by expiry, not by hand-off, or leave A's Unlock "not held").
// C's wait counts from its call, and most of it can go by before A
// releases: 10 of its leases, where a hand-off to the dead W keeps the
// lock W's for A's whole lease, 100 times longer.
func deadWaiter(s *labs.Scene, impl *labs.Impl) {
	s.TTL = 300 * time.Millisecond
	a, w, c := s.Client("A", impl, labs.TTL(holderLease)), s.Process("W", impl), s.Client("C", impl)
	s.Must(a.Lock())
	a.Enter()

	w.ParkAt(correct.HookQueued)
	w.Go("lock", "")
	w.WaitParked(correct.HookQueued)
	c.ParkAt(correct.HookQueued)
	wait := 10 * s.TTL
	call := c.Go("lock", wait.String())
	c.WaitParked(correct.HookQueued)
	c.Continue()
	s.Note("queue: W, then C")

	w.Kill()
	waitSubscribers(s, 2) // Redis has seen W's connections close: A's and C's subscriptions are left

	// A's release hands the lock on inside its script; C is held at the
	// point it got the lock until A's Unlock has returned, so the timeline
	// shows the two in their causal order.
	c.HoldAt(correct.HookAcquired)
	a.Exit()
	s.Must(a.Unlock())
	if _, parked := c.WaitParkedOr(call, correct.HookAcquired); parked {
		c.Continue()
	}
	if err := call.Err(); err != nil {
		s.Violation("C waited %v (10 leases) and never got the lock: A handed it to W, whose process was dead", wait)
		return
	}
	c.Enter()
	c.Exit()
	s.Must(c.Unlock())
}

// waitSubscribers waits until exactly n clients listen on waiters'
// channels (correct's "correct:w:*", lab10's "lab10:w:*").
func waitSubscribers(s *labs.Scene, n int) {
	s.Eventually(fmt.Sprintf("%d waiter channels are subscribed", n), func() (bool, error) {
		chans, err := s.Redis().PubSubChannels(s.Ctx, "*:w:*").Result()
		return len(chans) == n, err
	})
}

func TestLab10_BrokenDeadWaiterStalls(t *testing.T) {
	labs.Broken(t, deadTitle, deadWaiter, blindHandOff)
}
func TestLab10_FixedDeadWaiterSkipped(t *testing.T) { labs.Fixed(t, deadTitle, deadWaiter, handOff) }

// lostWakeupRace is lostWakeup explored: A holds the lock and releases it;
// B, once A holds it, waits for it (at most bWait), stopping after each
// refused try. In every order of A's release and B's stops, B must get the
// lock if A released it before B gave up.
const bWait = 500 * time.Millisecond

var lostWakeupRace = labs.Race{
	Points: []string{correct.HookRefused},
	Actors: func(s *labs.Scene, impl *labs.Impl) []*labs.Actor {
		a, b := s.Client("A", impl), s.Client("B", impl)
		held := func() bool { return s.Value() != "" }
		return []*labs.Actor{
			s.Actor(a, "lock+enter+exit", "unlock"),
			s.Actor(b, "lock "+bWait.String(), "enter+exit+unlock").When(held),
		}
	},
	Final: func(s *labs.Scene, actors []*labs.Actor) {
		a, b := actors[0], actors[1]
		if b.Err() != nil && a.Ended() != 0 && a.Ended() < b.Ended() {
			s.Violation("B slept through A's release: A released in turn %d, and B, waiting, gave up in turn %d after %v with the lock free", a.Ended(), b.Ended(), bWait)
		}
	},
}

var lostWakeupExplored = labs.ExploreOpts{Exhaustive: true, Budget: 100}

func TestLab10_BrokenLostWakeupExplored(t *testing.T) {
	labs.ExploreBroken(t, lostTitle, lostWakeupRace, wakeAllLate, lostWakeupExplored)
}

func TestLab10_FixedNoLostWakeupExplored(t *testing.T) {
	labs.ExploreFixed(t, lostTitle, lostWakeupRace, handOff, lostWakeupExplored)
}

func TestLab10_ExerciseExplored(t *testing.T) {
	labs.ExploreExercise(t, lostTitle, lostWakeupRace, exercise, lostWakeupExplored)
}
