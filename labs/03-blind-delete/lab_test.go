package lab03_test

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/correct"
	"github.com/locklab/locklab/internal/history"
	"github.com/locklab/locklab/labs"
	lab03 "github.com/locklab/locklab/labs/03-blind-delete"
	"github.com/locklab/locklab/naive"
)

func TestMain(m *testing.M) { labs.Main(m) }

const title = "Lab 03 (blind DEL)"

var (
	blindDelete = labs.Register("lab03-blind-delete", func(e *labs.Env) labs.Locker {
		return naive.NewBlindDelete(e.Redis(0), e.Key, naive.WithTTL(e.TTL), naive.WithHook(e.Hook))
	})
	tokenChecked = labs.Register("lab03-correct", func(e *labs.Env) labs.Locker {
		return correct.New(e.Redis(0), e.Key, correct.WithTTL(e.TTL), correct.WithHook(e.Hook))
	})
	exercise = labs.Register("lab03-exercise", func(e *labs.Env) labs.Locker {
		return lab03.NewExercise(e.Redis(0), e.Key, e.TTL, e.Hook)
	})
	_ = labs.RegisterError(lab03.ErrNotHeld, "not held")
)

// Leases. A's is short, so the lab does not wait long for it to run out.
// B's and C's are long, so that nothing else expires by accident while the
// test drives them, however loaded the machine: B must hold its lock from
// the moment it takes it until C has tried, and on a busy machine running
// the race detector those few steps have taken over 150ms.
const (
	leaseA = 200 * time.Millisecond
	lease  = 2 * time.Second
)

// pausedHolder: A finishes its work on order 1001, and its process stalls
// before it can release the lock (a long GC pause, a VM frozen for a live
// migration). The lease runs out, B takes the lock, and then A wakes up
// and releases what it still believes is its lock. C arrives last.
func pausedHolder(s *labs.Scene, impl *labs.Impl) {
	s.TTL = leaseA
	a := s.Process("A", impl) // a real process, so its pause is a real SIGSTOP
	s.TTL = lease
	b, c := s.Client("B", impl), s.Client("C", impl)

	// A works inside its lease...
	s.Must(a.Lock())
	a.Enter()
	a.Exit()
	// ...then freezes, just before its Unlock, for longer than the lease.
	a.Freeze()
	s.WaitExpired(s.Key)

	// B takes the lock and starts its own work.
	s.Must(b.Lock())
	b.Enter()

	// A wakes up and releases "its" lock.
	a.Thaw()
	unlock(s, a)

	// C wants the lock too. It must find B's lock in place.
	gotC, err := c.TryLock()
	s.Must(err)
	if gotC {
		c.Enter()
	}
	b.Exit()
	unlock(s, b)
	if gotC {
		c.Exit()
		unlock(s, c)
	}
}

func TestLab03_BrokenDeletesOthersLock(t *testing.T) {
	labs.Broken(t, title, pausedHolder, blindDelete)
}

func TestLab03_FixedRefusesForeignDelete(t *testing.T) {
	labs.Fixed(t, title, pausedHolder, tokenChecked)
}

func TestLab03_Exercise(t *testing.T) {
	labs.Exercise(t, title, pausedHolder, exercise)
}

// unlock runs c's Unlock and, when the key held someone else's lock, says
// on the timeline what became of it. "not held" is a fine answer (it is on
// c's lane); any other error fails the test.
func unlock(s *labs.Scene, c *labs.Client) {
	s.T().Helper()
	before := lockValue(s)
	if err := c.Unlock(); err != nil && !notHeld(err) {
		s.Must(err)
	}
	owner := ownerOf(s, before)
	if before == "" || owner == c.Name() {
		return
	}
	if after := lockValue(s); after == "" {
		s.Note("%s's unlock deleted %s's lock (%s)", c.Name(), owner, before)
	} else {
		s.Note("%s's lock (%s) left alone", owner, after)
	}
}

// lockValue returns the token in the lock's key, or "" if there is none.
func lockValue(s *labs.Scene) string {
	v, err := s.Redis().Get(s.Ctx, s.Key).Result()
	if errors.Is(err, redis.Nil) {
		return ""
	}
	s.Must(err)
	return v
}

// ownerOf returns the client that acquired the lock with token tok.
func ownerOf(s *labs.Scene, tok string) string {
	for _, e := range s.Events() {
		if e.Kind == history.Acquire && e.OK && tok != "" && e.Token == tok {
			return e.Client
		}
	}
	return ""
}

// notHeld reports whether err is an unlock's "not held".
func notHeld(err error) bool {
	return errors.Is(err, naive.ErrNotHeld) || errors.Is(err, correct.ErrNotHeld) || errors.Is(err, lab03.ErrNotHeld)
}
