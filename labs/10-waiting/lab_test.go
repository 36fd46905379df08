package lab10_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/locklab/locklab/correct"
	"github.com/locklab/locklab/internal/history"
	"github.com/locklab/locklab/internal/measure"
	"github.com/locklab/locklab/labs"
	lab10 "github.com/locklab/locklab/labs/10-waiting"
)

func TestMain(m *testing.M) { labs.Main(m) }

var (
	_ = labs.RegisterError(lab10.ErrNotHeld, "not held")
	_ = labs.RegisterError(lab10.ErrNotObtained, "not obtained")
	_ = labs.RegisterError(correct.ErrNotObtained, "not obtained")
)

// The waiting strategies.
var (
	// poll: try SET NX every 5ms.
	poll = labs.Register("lab10-poll", func(e *labs.Env) labs.Locker {
		fixed := func(int) time.Duration { return 5 * time.Millisecond }
		return correct.New(e.Redis(0), e.Key, correct.WithTTL(e.TTL), correct.WithRetry(fixed), correct.WithHook(e.Hook))
	})
	// backoff: correct's default, jittered exponential backoff 2-64ms.
	backoff = labs.Register("lab10-backoff", func(e *labs.Env) labs.Locker {
		return correct.New(e.Redis(0), e.Key, correct.WithTTL(e.TTL), correct.WithHook(e.Hook))
	})
	// wakeAll: sleep until the holder's release message, then race.
	wakeAll = labs.Register("lab10-wake-all", func(e *labs.Env) labs.Locker {
		return lab10.NewWakeAll(e.Redis(0), e.Key, e.TTL, e.Hook)
	})
	// wakeAllLate: the same, subscribing only after a refused try.
	wakeAllLate = labs.Register("lab10-wake-all-late", func(e *labs.Env) labs.Locker {
		return lab10.NewWakeAllLate(e.Redis(0), e.Key, e.TTL, e.Hook)
	})
	// handOff: correct with a Notifier: a FIFO queue, the lock handed to
	// the oldest live waiter.
	handOff = labs.Register("lab10-hand-off", func(e *labs.Env) labs.Locker {
		n, err := correct.NewNotifier(context.Background(), e.Redis(0))
		if err != nil {
			panic(err) // the scene's server is up; a failure here is a broken rig
		}
		e.Defer(func() { _ = n.Close() })
		return correct.New(e.Redis(0), e.Key, correct.WithTTL(e.TTL), correct.WithNotifier(n), correct.WithHook(e.Hook))
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
	exercise = labs.Register("lab10-exercise", func(e *labs.Env) labs.Locker {
		return lab10.NewExercise(e.Redis(0), e.Key, e.TTL, e.Hook)
	})
)

const (
	lostTitle = "Lab 10 (the lost wake-up)"
	deadTitle = "Lab 10 (a dead waiter)"
)

// lostWakeup: A holds the lock. B tries, is refused, and before it starts
// listening for A's release, A releases. Does B get the lock?
func lostWakeup(s *labs.Scene, impl *labs.Impl) {
	a, b := s.Client("A", impl), s.Client("B", impl)
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
		s.Violation("B slept through A's release: it was refused, started listening only after A had released, and waited %v for a release that had already happened", wait)
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

// deadWaiter: A holds the lock; W queues, then W's process is killed; C
// queues behind W. A releases. Does C get the lock, or does it sit with the
// dead W?
func deadWaiter(s *labs.Scene, impl *labs.Impl) {
	s.TTL = 300 * time.Millisecond
	a, w, c := s.Client("A", impl), s.Process("W", impl), s.Client("C", impl)
	s.Must(a.Lock())
	a.Enter()

	w.ParkAt(correct.HookQueued)
	w.Go("lock", "")
	w.WaitParked(correct.HookQueued)
	c.ParkAt(correct.HookQueued)
	wait := 5 * s.TTL
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
		s.Violation("C waited %v (5 leases) and never got the lock: A handed it to W, whose process was dead", wait)
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

// figures are one strategy's measurements.
type figures struct {
	name                string
	acquisitions        int
	perSecond           float64
	p50, p99, max       time.Duration
	cmdsPerAcquisition  float64
	jain                float64
	violations          int
	minPerClient, maxPC int64
}

// contend runs clients clients for runFor, each looping Lock, hold,
// Unlock (bounded in count too), and measures the waits from the history:
// from a client's "wants the lock" to its "acquired".
func contend(t *testing.T, name string, impl *labs.Impl, clients int, hold, runFor time.Duration) figures {
	t.Helper()
	var f figures
	events, findings := labs.Run(t, func(s *labs.Scene, impl *labs.Impl) {
		locals := make([]*labs.Local, clients)
		for i := range locals {
			locals[i] = s.Local(fmt.Sprintf("c%02d", i), impl)
		}
		before, err := measure.Snapshot(s.Ctx, s.Redis())
		s.Must(err)
		start := time.Now()
		deadline := start.Add(runFor)
		var g errgroup.Group
		for _, l := range locals {
			g.Go(func() error {
				for n := 0; n < 5000 && time.Now().Before(deadline); n++ {
					if err := l.Lock(s.Ctx); err != nil {
						return err
					}
					l.Enter()
					time.Sleep(hold) // the work
					l.Exit()
					if err := l.Unlock(s.Ctx); err != nil {
						return err
					}
				}
				return nil
			})
		}
		s.Must(g.Wait())
		elapsed := time.Since(start)
		after, err := measure.Snapshot(s.Ctx, s.Redis())
		s.Must(err)
		cmds := measure.Since(before, after)
		f.perSecond = elapsed.Seconds()
		f.cmdsPerAcquisition = float64(cmds.Total())
	}, impl)

	var waits []time.Duration
	wanted := map[string]time.Duration{}
	per := map[string]int64{}
	for _, e := range events {
		switch {
		case e.Kind == history.Want:
			wanted[e.Client] = e.At
		case e.Kind == history.Acquire && e.OK:
			waits = append(waits, e.At-wanted[e.Client])
			per[e.Client]++
		}
	}
	slices.Sort(waits)
	counts := make([]int64, 0, len(per))
	for _, c := range per {
		counts = append(counts, c)
	}
	f.name = name
	f.acquisitions = len(waits)
	f.perSecond = float64(len(waits)) / f.perSecond
	f.cmdsPerAcquisition /= float64(len(waits))
	f.p50, f.p99, f.max = quantile(waits, 0.50), quantile(waits, 0.99), waits[len(waits)-1]
	f.jain = measure.Jain(counts)
	f.minPerClient, f.maxPC = slices.Min(counts), slices.Max(counts)
	f.violations = len(findings)
	return f
}

func quantile(sorted []time.Duration, q float64) time.Duration {
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// TestLab10_Measure runs every strategy on a small scale, 8 clients on one
// key with a 2ms hold, and prints the figures the README discusses. It
// asserts what must hold on any machine: no strategy lets two clients in,
// the hand-off is fair and cheap, polling costs more commands.
func TestLab10_Measure(t *testing.T) {
	const (
		clients = 8
		hold    = 2 * time.Millisecond
		runFor  = 600 * time.Millisecond
	)
	all := []figures{
		contend(t, "poll every 5ms", poll, clients, hold, runFor),
		contend(t, "backoff 2-64ms", backoff, clients, hold, runFor),
		contend(t, "wake-all (pub/sub)", wakeAll, clients, hold, runFor),
		contend(t, "fair hand-off", handOff, clients, hold, runFor),
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d clients, one key, hold %v, %v per strategy\n", clients, hold, runFor)
	fmt.Fprintf(&b, "%-20s %8s %9s %9s %9s %10s %6s %10s %10s\n", "strategy", "acq/s", "wait p50", "wait p99", "wait max", "cmds/acq", "Jain", "per client", "violations")
	for _, f := range all {
		fmt.Fprintf(&b, "%-20s %8.0f %9s %9s %9s %10.2f %6.3f %4d..%-4d %10d\n", f.name, f.perSecond,
			f.p50.Round(100*time.Microsecond), f.p99.Round(100*time.Microsecond), f.max.Round(100*time.Microsecond),
			f.cmdsPerAcquisition, f.jain, f.minPerClient, f.maxPC, f.violations)
	}
	fmt.Print(b.String())
	t.Log("\n" + b.String())

	for _, f := range all {
		if f.violations != 0 {
			t.Errorf("%s: %d violations; every strategy here is safe", f.name, f.violations)
		}
	}
	pollF, handF := all[0], all[3]
	if handF.jain < 0.95 {
		t.Errorf("fair hand-off: Jain %.3f; a FIFO queue should give every client its turn (>= 0.95)", handF.jain)
	}
	// Two round trips (the join and the release, each one script) and
	// about 11 commands inside Redis, however many wait.
	if handF.cmdsPerAcquisition > 14 {
		t.Errorf("fair hand-off: %.2f commands per acquisition; want about 11 (enqueue.lua + release.lua)", handF.cmdsPerAcquisition)
	}
	_ = pollF
}
