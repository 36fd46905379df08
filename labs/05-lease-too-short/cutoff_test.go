package lab05_test

import (
	"testing"

	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/labs"
)

// Part 2, the other way to outlive a lease without knowing it.
// cutOffHolder: A's process never stops, but its network to Redis does:
// every connection is reset for longer than A's lease, then the network
// comes back. Meanwhile the lease runs out and B takes the lock and ships
// the order. When A reaches Redis again, it finishes its job and ships the
// order too, unless its lock has closed Done by then.
//
// A watchdog that only asks "was I away longer than the lease?" sees
// nothing wrong here: its ticks came on time, its renewals just failed.
func cutOffHolder(s *labs.Scene, impl *labs.Impl) {
	s.TTL = lease
	link := faultproxy.Start(s.T(), s.Node().Addr())
	a := s.Client("A", impl, labs.Addrs(link.Addr()))
	b := s.Client("B", impl)
	a.MustDo(narrate, "")

	var before int
	awayPastLease(s, a, b, func() {
		before = s.EventsOf("A")
		link.Reset()
		s.Fault("network: A cannot reach Redis (every connection reset); A's process runs on")
	}, func() int {
		link.Heal()
		s.Fault("network: A reaches Redis again")
		// As after a pause: A's lock speaks first (a renewal, or Done
		// closed, maybe already while it was cut off), then A gets the
		// rest of its job.
		return before
	}, "A's lock said nothing for %v after the network came back: it neither renewed the lock nor closed Done")
}

func TestLab05_BrokenBlindRenewalAfterCutOff(t *testing.T) {
	labs.Caught(t, titleCutOff, cutOffHolder, blindRenewal)
}

func TestLab05_FixedWatchdogAfterCutOff(t *testing.T) {
	labs.Safe(t, titleCutOff, cutOffHolder, watchdogLock)
}

func TestLab05_ExerciseCutOff(t *testing.T) {
	labs.Exercise(t, titleCutOff, cutOffHolder, exercise)
}
