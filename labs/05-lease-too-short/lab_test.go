package lab05_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/locklab/locklab/correct"
	"github.com/locklab/locklab/labs"
	lab05 "github.com/locklab/locklab/labs/05-lease-too-short"
	"github.com/locklab/locklab/naive"
	"github.com/locklab/locklab/watchdog"
)

func TestMain(m *testing.M) { labs.Main(m) }

const (
	titleJob    = "Lab 05 (a job longer than its lease)"
	titlePause  = "Lab 05 (a holder frozen past its lease)"
	titleCrash  = "Lab 05 (a holder that crashes)"
	titleCutOff = "Lab 05 (a holder cut off from Redis past its lease)"
)

const (
	// lease is the TTL of every lock here but two: short, so that the lab
	// does not wait long for a lease to run out.
	lease = 500 * time.Millisecond
	// renewDivisor sets how often the watchdog renews a lease: every
	// twentieth of it (25ms for a lease of 500ms). A renewal then has
	// 468ms (lease - lease/20 - the 7ms drift margin) to get through
	// before the lease is at risk: seven times the longest goroutine
	// stall (65ms) measured over 90s on the loaded 2-core machine the
	// tests run on. The default, a third of the lease, is meant for
	// leases of seconds.
	renewDivisor = 20
	// longLease is the other way out of a lease that is too short: make it
	// longer than any job. It is what a crashed holder then costs.
	longLease = 30 * time.Second
	// bLease is B's lease in the long job, where B holds the lock across
	// A's last steps: long, so that nothing of B's expires by accident
	// while the test drives it, however loaded the machine.
	bLease = 10 * time.Second
	// order is the protected write.
	order = "ship order 1001"
)

var (
	// fixedLease is correct.Mutex: SET NX PX (in take.lua) and owner-checked scripts,
	// and a lease that nobody renews.
	fixedLease = labs.Register("lab05-fixed-lease", func(e *labs.Env) labs.Locker {
		return &subject{inner: labs.NewCorrect(e)}
	})
	// longFixedLease is correct.Mutex with a lease of 30s, whatever the
	// scene's TTL.
	longFixedLease = labs.Register("lab05-long-lease", func(e *labs.Env) labs.Locker {
		return &subject{inner: labs.NewCorrect(e, correct.WithTTL(longLease))}
	})
	// blindRenewal is the tutorial's watchdog: PEXPIRE every ttl/3, with
	// no owner check and no word to the holder.
	blindRenewal = labs.Register("lab05-blind-renewal", func(e *labs.Env) labs.Locker {
		m := &subject{}
		spy := &spyClient{Client: e.Redis(0), subject: m}
		m.inner = naive.NewBlindRenewal(spy, e.Key, naive.WithTTL(e.TTL), naive.WithHook(e.Hook))
		m.gated(e)
		return m
	})
	// watchdogLock is package watchdog: owner-checked renewal on an
	// absolute schedule, and Done closed the moment the lock is lost.
	watchdogLock = labs.Register("lab05-watchdog", func(e *labs.Env) labs.Locker {
		w := watchdog.New(e.Redis(0), e.Key, watchdog.WithTTL(e.TTL), watchdog.WithInterval(e.TTL/renewDivisor), watchdog.WithHook(e.Hook))
		m := &subject{inner: w, detach: true}
		m.gated(e)
		return m
	})
	exercise = labs.Register("lab05-exercise", func(e *labs.Env) labs.Locker {
		m := &subject{}
		spy := &spyClient{Client: e.Redis(0), subject: m}
		m.inner = lab05.NewExercise(spy, e.Key, e.TTL)
		m.gated(e)
		return m
	})
	_ = labs.RegisterError(lab05.ErrNotHeld, labs.LabelNotHeld)
)

// Part 1. longJob: A takes the lock for order 1001 and starts a job that
// lasts the given number of leases; B wants the same order and waits for
// the lock. When A's job is done, A ships the order, unless its lock told
// it (Done) that it was lost.
func longJob(leases float64) labs.Scenario {
	return func(s *labs.Scene, impl *labs.Impl) {
		s.TTL = lease
		job := time.Duration(leases * float64(lease))
		a := s.Client("A", impl)
		b := s.Client("B", impl, labs.TTL(bLease))

		s.Must(a.Lock())
		mine := s.Value() // what A wrote into the key
		a.Note(fmt.Sprintf("starts a job of %v (%g leases)", job, leases))
		working := a.Go(work, job.String())
		waiting := b.Go("lock", "") // B wants order 1001 too

		// The test waits for A's job first, then looks at the key: either
		// it is still A's, or A's lease ran out mid-job and B has it (or is
		// about to: B polls). B's next steps come after that, so the
		// picture is the same on every run, however the machine schedules
		// the two clients.
		out, err := working.Result()
		s.Must(err)
		gotB := false
		if s.Value() == mine {
			s.Note("A's job is done after %v: %s is still A's lock, PTTL %d ms; B stops waiting", job, s.Key, s.PTTL())
			waiting.Cancel()
			gotB = waiting.Err() == nil
		} else {
			s.Must(waiting.Err())
			gotB = true
			s.Note("A's job is done after %v; its %v lease ran out mid-job, and %s now holds %s", job, lease, s.Key, s.Value())
		}
		if gotB {
			b.Enter()
			b.Write(order)
		}
		if out != "lost" {
			a.MustDo(ship, order)
		}
		if gotB {
			b.Exit()
			b.Release()
		}
		a.Release()
	}
}

func TestLab05_BrokenJobOutlivesLease(t *testing.T) {
	labs.Broken(t, titleJob, longJob(1.5), fixedLease)
}

func TestLab05_FixedWatchdogKeepsLongJob(t *testing.T) {
	labs.Fixed(t, titleJob, longJob(10), watchdogLock)
}

// Part 2. pausedHolder: A, in a child process, takes the lock and does
// the first half of its job. Then its process is frozen (SIGSTOP: a
// stop-the-world GC pause, a VM live-migrated) until its lease has run
// out in Redis, and B takes the lock and ships the order. A's process is
// resumed (SIGCONT) and does the rest of its job, then ships the order
// unless its lock has told it, through Done, that the lock is lost.
func pausedHolder(s *labs.Scene, impl *labs.Impl) {
	s.TTL = lease
	a := s.Process("A", impl) // a real process, so its pause is a real SIGSTOP
	b := s.Client("B", impl)
	a.MustDo(narrate, "") // A tells, in its lane, what its lock does in the background

	awayPastLease(s, a, b, a.Freeze, func() int {
		// When A's process resumes, its lock's goroutines (the watchdog,
		// its timers) and its job resume together. The test lets the lock
		// go first: it waits until A's lock has said something in A's lane
		// (a renewal, or Done closed) before it hands A the rest of the
		// job, so the picture is the same on every run. In a real process
		// the job may run a step before the lock's timer fires; see the
		// README.
		before := s.EventsOf("A")
		a.Thaw()
		return before
	}, "A's lock said nothing for %v after the pause: it neither renewed the lock nor closed Done")
}

// awayPastLease is part 2's story, once A and B are started: A takes the
// lock and does the first of its job's two steps. Then leave takes A away
// from Redis until its lease has run out, and B takes the lock and writes
// the order. back brings A back and returns how many events A's lane held
// before A's lock could last speak; A's lock speaks first (a renewal, or
// Done closed), or the timeline notes silence, and only then does A do
// the second step, and ship the order unless its lock is lost.
func awayPastLease(s *labs.Scene, a, b *labs.Client, leave func(), back func() (before int), silence string) {
	s.Must(a.Lock())
	step := lease / 2
	a.Note(fmt.Sprintf("starts a job of two steps of %v", step))
	a.MustDo(work, step.String()) // the first step
	leave()
	gone := s.EventuallyWithin(4*lease, s.Key+" is gone", func() (bool, error) {
		n, err := s.Redis().Exists(s.Ctx, s.Key).Result()
		return n == 0, err
	})
	if !gone {
		s.Violation("%s did not expire while A was away: its PTTL is %d ms %v later, with A's lease %v. A renewal before A went away set a lease of its own: a renewal renews to the TTL it is given", s.Key, s.PTTL(), 4*lease, lease)
		back()
		return
	}
	s.Fault("%s expired", s.Key)

	s.Must(b.Lock())
	b.Enter()
	b.Write(order)

	before := back()
	waitUntil(s, 3*lease, silence, func() bool { return s.EventsOf("A") > before })
	if a.MustDo(work, step.String()) != "lost" { // the second step
		a.MustDo(ship, order)
	}
	b.Exit()
	b.Release()
	a.Release()
}

func TestLab05_BrokenBlindRenewalAfterPause(t *testing.T) {
	labs.Broken(t, titlePause, pausedHolder, blindRenewal)
}

func TestLab05_FixedWatchdogSignalsLoss(t *testing.T) {
	labs.Fixed(t, titlePause, pausedHolder, watchdogLock)
}

func TestLab05_Exercise(t *testing.T) {
	labs.Exercise(t, titlePause, pausedHolder, exercise)
}
