package lab06_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/locklab/locklab/labs"
	lab06 "github.com/locklab/locklab/labs/06-reentrancy"
	"github.com/locklab/locklab/reentrant"
)

func TestMain(m *testing.M) { labs.Main(m) }

const title = "Lab 06 (a call path that locks twice)"

const (
	// lease is long: nothing in this lab waits for a lease to run out, and
	// nothing must expire by accident while the test drives the clients.
	lease = 10 * time.Second
	// reserveWait is how long reserveStock waits for the lock: its share
	// of the request's deadline.
	reserveWait = 500 * time.Millisecond
)

// The points where the lab parks A's call path: inside reserveStock,
// holding the lock twice, and back in processOrder after reserveStock
// released it once.
const (
	hookInReserveStock    = "in-reserveStock"
	hookAfterReserveStock = "after-reserveStock"
)

var (
	// labs.Correct, correct.Mutex, is a sound lock, and not reentrant.
	// counted is reentrant.Mutex: a count per owner in a Redis hash.
	counted  = labs.Reentrant
	exercise = labs.Register("lab06-exercise", func(e *labs.Env) labs.Locker {
		return labs.NewCallPath(lab06.NewExercise(e.Redis(0), e.Key, e.TTL))
	})
	_ = labs.RegisterError(lab06.ErrNotHeld, labs.LabelNotHeld)
)

// processOrder is the order service's handler, run inside a client: it
// locks order 1001, calls reserveStock (which locks order 1001 too,
// because other handlers call it on its own), ships the order, and
// unlocks. The call path's owner travels in ctx, as it would from one
// function, goroutine or service to the next. A lock that has no use for
// an owner (correct.Mutex) ignores it.
var processOrder = labs.RegisterOp("processOrder", func(ctx context.Context, l *labs.Local, _ string) (string, error) {
	owner := reentrant.NewOwner()
	if c, ok := l.Locker.(interface{ Owner() reentrant.Owner }); ok {
		owner = c.Owner()
	}
	ctx = reentrant.WithOwner(ctx, owner)

	l.Note("processOrder(1001) locks order 1001")
	if err := l.Lock(ctx); err != nil {
		return "", err
	}
	l.Enter()
	err := reserveStock(ctx, l)
	if err == nil {
		l.Env.Hook(ctx, hookAfterReserveStock)
		l.Write("ship order 1001", true)
	}
	l.Exit()
	if uerr := l.Unlock(ctx); uerr != nil && !labs.NotHeld(uerr) {
		return "", uerr
	}
	return "", err
})

// reserveStock locks order 1001 itself, waiting at most reserveWait, and
// reserves the stock.
func reserveStock(ctx context.Context, l *labs.Local) error {
	l.Note("reserveStock(1001) locks order 1001 too")
	wait, cancel := context.WithTimeout(ctx, reserveWait)
	defer cancel()
	if err := l.Lock(wait); err != nil {
		return fmt.Errorf("reserveStock: %w", err)
	}
	l.Env.Hook(ctx, hookInReserveStock)
	l.Write("reserve stock for order 1001", true)
	return l.Unlock(ctx)
}

// recursiveCall: A runs processOrder, which calls reserveStock. B, another
// call path, wants order 1001 while A holds it twice, and again once
// reserveStock has let go of it once; it also tries to unlock A's lock.
// When processOrder is done, A unlocks once more than it locked.
func recursiveCall(s *labs.Scene, impl *labs.Impl) {
	s.TTL = lease
	a, b := s.Client("A", impl), s.Client("B", impl)

	a.ParkAt(hookInReserveStock, hookAfterReserveStock)
	call := a.Go(processOrder, "")
	if _, parked := a.WaitParkedOr(call, hookInReserveStock); parked {
		before := s.ShowKey()
		if before.PTTL == -1 {
			s.Violation("%s has no TTL (PTTL -1): if A's process dies while it holds the lock, nobody ever gets it again", s.Key)
		}
		tryOrder(s, b)
		b.Release() // another owner's Unlock: refused, and nothing changes
		if after := s.ReadKey(); before.Unchanged(after) {
			s.Note("%s: %v: unchanged, not even the TTL", s.Key, after)
		} else {
			s.Violation("B's Unlock changed A's lock: %v before, %v after", before, after)
		}
		a.Continue()
		if _, parked := a.WaitParkedOr(call, hookAfterReserveStock); parked {
			s.ShowKey()
			tryOrder(s, b)
			a.Continue()
		}
	}
	switch _, err := call.Result(); {
	case labs.NotHeld(err):
		s.Violation("reserveStock's Unlock found %s no longer held by processOrder, which still held it: another client released it or took it meanwhile", s.Key)
	case errors.Is(err, context.DeadlineExceeded):
		s.Violation("processOrder deadlocked on itself: reserveStock waited %v for %s, which its own caller held, and the lock is not reentrant",
			reserveWait, s.Key)
	case err != nil:
		s.Must(err)
	}
	s.ShowKey()

	// One Unlock more than Locks: it must be refused.
	a.Note("one Unlock too many")
	if err := a.Unlock(); err == nil {
		s.Violation("A's extra Unlock succeeded: a lock released more often than taken")
	} else if !labs.NotHeld(err) {
		s.Must(err)
	}
}

func TestLab06_BrokenNestedLockDeadlocks(t *testing.T) {
	labs.Broken(t, title, recursiveCall, labs.Correct)
}

func TestLab06_FixedReentrantCounts(t *testing.T) {
	labs.Fixed(t, title, recursiveCall, counted)
}

func TestLab06_Exercise(t *testing.T) {
	labs.Exercise(t, title, recursiveCall, exercise)
}

// tryOrder has c try once for order 1001; if it gets the lock, it ships
// the order and unlocks.
func tryOrder(s *labs.Scene, c *labs.Client) {
	s.T().Helper()
	ok, err := c.TryLock()
	s.Must(err)
	if !ok {
		return
	}
	c.Enter()
	c.Write("ship order 1001")
	c.Exit()
	c.Release()
}

// nestedRace is recursiveCall explored: A runs processOrder, stopping
// inside reserveStock and after it; B, another call path, acts at any of
// those stops once A holds order 1001: it tries to unlock A's lock, then
// tries for the lock itself and, if it got it, works and releases. No two
// call paths inside at once; processOrder must end without deadlocking
// on itself or finding its lock gone.
var nestedRace = labs.Race{
	Ops:    []string{processOrder},
	Points: []string{hookInReserveStock, hookAfterReserveStock},
	Actors: func(s *labs.Scene, impl *labs.Impl) []*labs.Actor {
		s.TTL = lease
		a, b := s.Client("A", impl), s.Client("B", impl)
		held := func() bool {
			n, err := s.Redis().Exists(s.Ctx, s.Key).Result()
			s.Must(err)
			return n == 1
		}
		return []*labs.Actor{
			s.Actor(a, processOrder),
			s.Actor(b, "unlock", "trylock+enter", "exit+unlock").When(held),
		}
	},
	Final: func(s *labs.Scene, actors []*labs.Actor) {
		switch err := actors[0].Err(); {
		case labs.NotHeld(err):
			s.Violation("reserveStock's Unlock found %s no longer held by processOrder, which still held it: another call path released it or took it meanwhile", s.Key)
		case errors.Is(err, context.DeadlineExceeded):
			s.Violation("processOrder deadlocked on itself: reserveStock waited %v for %s, which its own caller held, and the lock is not reentrant", reserveWait, s.Key)
		case err != nil:
			s.Violation("processOrder failed: %v", err)
		}
	},
}

var nestedExplored = labs.ExploreOpts{Exhaustive: true, Budget: 200}

func TestLab06_BrokenNestedLockDeadlocksExplored(t *testing.T) {
	labs.ExploreBroken(t, title, nestedRace, labs.Correct, nestedExplored)
}

func TestLab06_FixedReentrantCountsExplored(t *testing.T) {
	labs.ExploreFixed(t, title, nestedRace, counted, nestedExplored)
}

func TestLab06_ExerciseExplored(t *testing.T) {
	labs.ExploreExercise(t, title, nestedRace, exercise, nestedExplored)
}
