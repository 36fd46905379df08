package lab06_test

import (
	"context"
	"testing"
	"time"

	"github.com/locklab/locklab/labs"
	"github.com/locklab/locklab/reentrant"
)

// The lease of a lock taken twice: a nested Lock by the owner renews the
// lease to the TTL it is given, and so does an Unlock that leaves the lock
// held (the README's Hint 2), for the code inside counts on a full lease
// from the moment its own Lock returned.

// The points where the nested-lease check parks A.
const (
	hookHeldOnce  = "held-once"
	hookHeldTwice = "held-twice"
	hookHeldAgain = "held-once-again"
)

// nestedLease is the owner's call path, lock by lock: Lock, Lock again
// (nested), Unlock, Unlock, parking between each.
var nestedLease = labs.RegisterOp("nestedLease", func(ctx context.Context, l *labs.Local, _ string) (string, error) {
	owner := reentrant.NewOwner()
	if c, ok := l.Locker.(interface{ Owner() reentrant.Owner }); ok {
		owner = c.Owner()
	}
	ctx = reentrant.WithOwner(ctx, owner)
	if err := l.Lock(ctx); err != nil {
		return "", err
	}
	l.Env.Hook(ctx, hookHeldOnce)
	if err := l.Lock(ctx); err != nil {
		return "", err
	}
	l.Env.Hook(ctx, hookHeldTwice)
	if err := l.Unlock(ctx); err != nil {
		return "", err
	}
	l.Env.Hook(ctx, hookHeldAgain)
	return "", l.Unlock(ctx)
})

// renewedWithin is how far below the lease a renewed key's PTTL may be
// when the check reads it: the time the Lock or Unlock and the read took.
const renewedWithin = time.Second

// leaseOnReentry: A locks; half its lease goes by (the check shortens the
// key's PTTL to half the lease, as the time would); A locks again, nested:
// the key's PTTL must be the whole lease again. Half of it goes by once
// more; A unlocks once, still holding the lock: the PTTL must be the whole
// lease again. Then A unlocks for good.
func leaseOnReentry(s *labs.Scene, impl *labs.Impl) {
	s.TTL = lease
	a := s.Client("A", impl)
	a.ParkAt(hookHeldOnce, hookHeldTwice, hookHeldAgain)
	call := a.Go(nestedLease, "")
	half := func() {
		s.Must(s.Redis().PExpire(s.Ctx, s.Key, lease/2).Err())
		s.Fault("half of A's lease goes by: %s's PTTL set to %v", s.Key, lease/2)
	}
	renewed := func(after, rule string) {
		k := s.ShowKey()
		switch {
		case k.Kind == "none":
			s.Violation("%s is gone after %s, though A still holds the lock once", s.Key, after)
		case k.PTTL >= 0 && k.PTTL < (lease-renewedWithin).Milliseconds():
			s.Violation("%s's PTTL is %d ms after %s, with a lease of %v: the lease was not renewed: %s", s.Key, k.PTTL, after, lease, rule)
		}
	}
	if _, parked := a.WaitParkedOr(call, hookHeldOnce); !parked {
		s.Must(call.Err())
		return
	}
	half()
	a.Continue()
	if _, parked := a.WaitParkedOr(call, hookHeldTwice); !parked {
		s.Must(call.Err())
		return
	}
	renewed("A's nested Lock", "a Lock renews the lease to the TTL it is given, nested or not: the code inside counts on a whole lease from its own Lock")
	half()
	a.Continue()
	if _, parked := a.WaitParkedOr(call, hookHeldAgain); !parked {
		s.Must(call.Err())
		return
	}
	renewed("A's first Unlock", "an Unlock that leaves the lock held renews it too (the README's Hint 2): the owner is still inside")
	a.Continue()
	if _, err := call.Result(); err != nil && !labs.NotHeld(err) {
		s.Must(err)
	}
}

func TestLab06_FixedNestedLease(t *testing.T) {
	labs.Safe(t, title, leaseOnReentry, counted)
}

func TestLab06_ExerciseNestedLease(t *testing.T) {
	labs.Exercise(t, title, leaseOnReentry, exercise)
}
