package lab05_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/locklab/locklab/labs"
)

// Part 3. crashedHolder: A, in a child process, takes the lock, does a job
// of 1.5 leases and ships the order; then its process is killed
// (SIGKILL: the OOM killer, a power cut) before it can release the lock.
// B wants the lock, and waits for it as long as three leases.
func crashedHolder(s *labs.Scene, impl *labs.Impl) {
	s.TTL = lease
	a := s.Process("A", impl) // a real process, so it can really die
	b := s.Client("B", impl)

	s.Must(a.Lock())
	job := 3 * lease / 2
	a.Note(fmt.Sprintf("starts a job of %v", job))
	if a.MustDo(work, job.String()) != "lost" {
		a.MustDo(ship, order)
	}
	s.Note("PTTL %s = %d ms", s.Key, s.PTTL())
	a.Kill()

	killed := time.Now()
	wait := 3 * lease
	if err := b.LockWithin(wait); err != nil {
		if labs.IsGone(err) {
			s.Must(err)
		}
		s.Violation("B waited %v (3 leases of %v) and never got %s: A died holding it, and its lease runs for another %v",
			wait, lease, s.Key, time.Duration(s.PTTL())*time.Millisecond)
		return
	}
	s.Note("B got the lock %d ms after A died (the lease is %v)", time.Since(killed).Milliseconds(), lease)
	b.MustDo(ship, order)
	b.Release()
}

func TestLab05_BrokenLongLeaseAfterCrash(t *testing.T) {
	labs.Broken(t, titleCrash, crashedHolder, longFixedLease)
}

func TestLab05_FixedWatchdogLeaseAfterCrash(t *testing.T) {
	labs.Fixed(t, titleCrash, crashedHolder, watchdogLock)
}
