package lab04_test

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/correct"
	"github.com/locklab/locklab/internal/history"
	"github.com/locklab/locklab/labs"
	lab04 "github.com/locklab/locklab/labs/04-get-then-del"
	"github.com/locklab/locklab/naive"
)

func TestMain(m *testing.M) { labs.Main(m) }

const title = "Lab 04 (GET then DEL)"

var (
	getThenDelete = labs.Register("lab04-get-then-delete", func(e *labs.Env) labs.Locker {
		return naive.NewGetThenDelete(e.Redis(0), e.Key, naive.WithTTL(e.TTL), naive.WithHook(e.Hook))
	})
	luaRelease = labs.Register("lab04-correct", func(e *labs.Env) labs.Locker {
		return correct.New(e.Redis(0), e.Key, correct.WithTTL(e.TTL), correct.WithHook(e.Hook))
	})
	exercise = labs.Register("lab04-exercise", func(e *labs.Env) labs.Locker {
		return lab04.NewExercise(e.Redis(0), e.Key, e.TTL, e.Hook)
	})
	_ = labs.RegisterError(lab04.ErrNotHeld, "not held")
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

// inTheGap are the points where A stops inside its release: after GET
// showed its own token and before DEL (two commands), or right before the
// one release script. The same script drives both locks.
var inTheGap = []string{naive.HookAfterGetMatch, correct.HookBeforeRelease}

// expiresMidRelease: A finishes its work on order 1001 and releases the
// lock, checking first that the lock is still its own. Between that check
// and the delete, A stalls (a GC pause, a slow network) past its lease; B
// takes the lock. Then A's delete arrives. C comes last.
func expiresMidRelease(s *labs.Scene, impl *labs.Impl) {
	s.TTL = leaseA
	a := s.Client("A", impl)
	s.TTL = lease
	b, c := s.Client("B", impl), s.Client("C", impl)

	s.Must(a.Lock())
	a.Enter()
	a.Exit()

	// A starts its release and stops inside it.
	a.ParkAt(inTheGap...)
	release := a.Go("unlock", "")
	switch a.WaitParked(inTheGap...) {
	case naive.HookAfterGetMatch:
		s.Note("A's GET saw %s, its own token; its DEL is not sent yet", lockValue(s))
	case correct.HookBeforeRelease:
		s.Note("A's release script is not sent yet")
	}

	// A's lease runs out meanwhile, and B takes the lock.
	s.WaitExpired(s.Key)
	s.Must(b.Lock())
	b.Enter()

	// A goes on: what does its release do to B's lock?
	unlock(s, a, func() error {
		a.Continue()
		return release.Err()
	})

	// C wants the lock too. It must find B's lock in place.
	gotC, err := c.TryLock()
	s.Must(err)
	if gotC {
		c.Enter()
	}
	b.Exit()
	unlock(s, b, b.Unlock)
	if gotC {
		c.Exit()
		unlock(s, c, c.Unlock)
	}
}

func TestLab04_BrokenDeletesAfterCheck(t *testing.T) {
	labs.Broken(t, title, expiresMidRelease, getThenDelete)
}

func TestLab04_FixedLuaReleaseIsAtomic(t *testing.T) {
	labs.Fixed(t, title, expiresMidRelease, luaRelease)
}

func TestLab04_Exercise(t *testing.T) {
	labs.Exercise(t, title, expiresMidRelease, exercise)
}

// unlock runs do, c's unlock, and, when the key held someone else's lock,
// says on the timeline what became of it. "not held" is a fine answer (it
// is on c's lane); any other error fails the test.
func unlock(s *labs.Scene, c *labs.Client, do func() error) {
	s.T().Helper()
	before := lockValue(s)
	if err := do(); err != nil && !notHeld(err) {
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
	return errors.Is(err, naive.ErrNotHeld) || errors.Is(err, correct.ErrNotHeld) || errors.Is(err, lab04.ErrNotHeld)
}
