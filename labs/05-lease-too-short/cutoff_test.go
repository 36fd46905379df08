package lab05_test

import (
	"strings"
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
	renewedOthers(s, "A")
}

// renewedOthers names the mistake when client's watchdog renewed a key
// that held someone else's token after it was cut off: its ticks came on
// time all along, so a check made in the process ("was I away longer than
// the lease?") saw nothing wrong.
func renewedOthers(s *labs.Scene, client string) {
	for _, e := range s.Events() {
		if e.Client == client && strings.Contains(e.Text, "watchdog renews:") && strings.Contains(e.Text, "but the key holds") {
			s.Violation("%s's watchdog renewed a lock that was no longer its own (%s) once the network came back. Its ticks came on time while it was cut off, so a local check (was I away longer than the lease?) sees nothing wrong: only Redis knows whose key it is. Renew with an owner check, in one step on the server", client, e.Text)
			return
		}
	}
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
