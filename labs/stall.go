package labs

import "time"

// StallInRelease is a scenario for any lock's release, labs 03 and 04's
// exercises among them: A works under its lock and releases it, and its
// release stalls before each of its Redis commands in turn
// ([Scene.Gaps]), until A's lease (leaseA) has run out and B has taken the
// lock. Then A's release goes on, and C tries for the lock. B's lock must
// survive A's late release, wherever the release stalled, and A's Unlock
// must say "not held". B and C get lease, long enough that nothing of
// theirs expires by accident.
func StallInRelease(leaseA, lease time.Duration) Scenario {
	return func(s *Scene, impl *Impl) {
		s.Gaps(1, func(k int) bool {
			a := s.Client("A", impl, TTL(leaseA))
			b, c := s.Client("B", impl, TTL(lease)), s.Client("C", impl, TTL(lease))
			s.Must(a.Lock())
			a.Enter()
			a.Exit()

			a.ParkAt(Command(k))
			release := a.Go("unlock", "")
			_, parked := a.WaitParkedOr(release, Command(k))
			if !parked { // A's release is done: it sent fewer than k commands
				s.Unlocking(a, release.Err)
			}
			if parked {
				s.WaitExpired(s.Key) // A's release stalls past its lease
			}
			s.Must(b.Lock())
			b.Enter()
			if parked {
				s.Unlocking(a, func() error {
					a.Continue()
					return release.Err()
				})
			}

			s.Latecomer(c, b)
			return parked
		})
	}
}
