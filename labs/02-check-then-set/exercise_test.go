package lab02_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/labs"
	lab02 "github.com/locklab/locklab/labs/02-check-then-set"
)

// The exercise: the charge itself must happen once, whatever the lock
// does. Two deliveries of the provider's "paid" event for an order are
// handled at once, by A and B, with no lock at all; each calls ChargeOnce.

// chargeOnceFunc is ChargeOnce's signature: the exercise's, or the
// reference's (reference_test.go).
type chargeOnceFunc func(ctx context.Context, client *redis.Client, orderID, eventID string, charge func(context.Context) error) (bool, error)

// handler is a client of the exercise: it takes no lock (its Locker
// methods do nothing) and handles deliveries with its ChargeOnce.
type handler struct{ chargeOnce chargeOnceFunc }

func (handler) Lock(context.Context) error            { return nil }
func (handler) TryLock(context.Context) (bool, error) { return true, nil }
func (handler) Unlock(context.Context) error          { return nil }

var (
	exercise   = labs.Register("lab02-exercise", func(*labs.Env) labs.Locker { return handler{lab02.ChargeOnce} })
	claimFirst = labs.Register("lab02-claim-first", func(*labs.Env) labs.Locker { return handler{referenceChargeOnce} })
)

// errProviderDown is the payment provider's 503.
var errProviderDown = labs.RegisterError(errors.New("payment provider: 503 service unavailable"), "payment provider down")

// deliver handles one delivery of order arg's "paid" event ("1001";
// "1001 fail" for a delivery whose charge the provider fails; "1001
// hangup" for one whose request ends during the charge: the provider hung
// up, and the request's context is cancelled). The charge is HINCRBY
// order:<id> charges 1, the protected resource; a charge that fails
// changes nothing. A delivery whose charge failed answers "failed" when
// ChargeOnce returned the failure.
var deliver = labs.RegisterOp("deliver", func(ctx context.Context, l *labs.Local, arg string) (string, error) {
	order, fail, _ := strings.Cut(arg, " ")
	h, ok := l.Locker.(handler)
	if !ok {
		return "", fmt.Errorf("client %s is not a lab 02 handler", l.Name)
	}
	c := l.Env.Redis(0)
	ctx, hangUp := context.WithCancel(ctx)
	defer hangUp()
	charged, err := h.chargeOnce(ctx, c, order, "evt_paid_"+order, func(ctx context.Context) error {
		switch fail {
		case "fail":
			l.Note("charge order %s: the provider answers 503, nothing charged", order)
			return errProviderDown
		case "hangup":
			hangUp()
			l.Note("charge order %s: the provider hung up, the request's context ended; nothing charged", order)
			return ctx.Err()
		}
		n, err := c.HIncrBy(ctx, "order:"+order, "charges", 1).Result()
		if err == nil {
			l.Note("charge order %s (charge #%d)", order, n)
		}
		return err
	})
	if errors.Is(err, errProviderDown) || (fail == "hangup" && errors.Is(err, context.Canceled)) {
		return "failed", nil // the provider will deliver again
	}
	if err != nil {
		return "", err
	}
	if !charged {
		l.Note("order %s charged already: nothing to do", order)
	}
	return fmt.Sprint(charged), nil
})

// chargesOf reads how many times an order was charged.
func chargesOf(s *labs.Scene, order string) int {
	n, err := s.Redis().HGet(s.Ctx, "order:"+order, "charges").Int()
	if errors.Is(err, redis.Nil) {
		return 0
	}
	s.Must(err)
	return n
}

// marker is ChargeOnce's marker key for an order, as exercise.go names it.
func marker(order string) string { return "charged:order:" + order }

// markerKeep is the least TTL a marker may have: a provider delivers an
// event again for hours (days, for some).
const markerKeep = 24 * time.Hour

// pttlOf reads a key's PTTL in ms: -2 when it is gone, -1 with no TTL.
func pttlOf(s *labs.Scene, key string) int64 {
	ms, err := s.Redis().Do(s.Ctx, "PTTL", key).Int64()
	s.Must(err)
	return ms
}

// duplicateDeliveries is the exercise's check, in two parts.
//
// First, every interleaving of two deliveries: A stalls before each of its
// Redis commands in turn (labs.Command) while B's delivery of the same
// event runs whole, then A goes on. The order must be charged once.
//
// Then a failed charge: A's delivery is the one whose charge the provider
// fails; the provider delivers again, to B, which must charge, and the
// marker must have no TTL. The same with a charge whose request ends (the
// provider hung up): the claim goes back all the same.
func duplicateDeliveries(s *labs.Scene, impl *labs.Impl) {
	order := 1000
	s.Gaps(1, func(k int) bool {
		order++
		id := fmt.Sprint(order)
		// A runs in a process of its own, as another instance of the
		// service does: what one process remembers, the other does not.
		a, b := s.Process("A", impl), s.Client("B", impl)
		a.ParkAt(labs.Command(k))
		call := a.Go(deliver, id)
		_, parked := a.WaitParkedOr(call, labs.Command(k))
		// A lock can fail: A stays away past any lease it holds. The
		// marker is no lease: if it has one, its running out is the cause.
		markerTTL := int64(-2)
		if parked {
			markerTTL = pttlOf(s, marker(id))
		}
		expired := parked && s.ExpireLeases("A") > 0
		b.MustDo(deliver, id)
		if parked {
			a.Continue()
		}
		_, err := call.Result()
		s.Must(err)
		switch n := chargesOf(s, id); {
		case n == 0:
			s.Violation("order %s was never charged, though both deliveries ran", id)
		case n > 1 && markerTTL > 0:
			s.Violation("order %s charged %s: the marker %s had a TTL (%d ms left when A paused), and when it ran out the other delivery found the order uncharged. A marker records a charge, it is not a lease: it must outlive every delivery of the event (no TTL)", id, times(n), marker(id), markerTTL)
		case n > 1 && expired:
			s.Violation("order %s charged %s: A paused past its lease, and both deliveries found the order uncharged before either had marked it. A lock around the charge is not enough, for a lock can fail (labs 03 to 09): the check and the mark must be one step on the server, taken before the charge", id, times(n))
		case n > 1:
			s.Violation("order %s charged %s: both deliveries found it uncharged before either had marked it; the check and the mark must be one step on the server, taken before the charge", id, times(n))
		}
		return parked
	})

	order++
	id := fmt.Sprint(order)
	s.Note("the provider fails the first delivery's charge for order %s", id)
	a, b := s.Client("A", impl), s.Client("B", impl)
	if out := a.MustDo(deliver, id+" fail"); out != "failed" {
		s.Violation("order %s: A's ChargeOnce returned (%s, nil) though the provider failed its charge (503): the charge's error was dropped; the provider takes the callback as handled, delivers it no more, and the order is never charged", id, out)
	}
	b.MustDo(deliver, id)
	if n := chargesOf(s, id); n != 1 {
		s.Violation("order %s charged %s after a failed charge and a second delivery; want once: a delivery whose charge fails must give its claim back, or the next delivery skips the order and nobody charges it", id, times(n))
	} else if ms := pttlOf(s, marker(id)); ms > 0 && ms < markerKeep.Milliseconds() {
		s.Violation("order %s: the marker %s has a TTL of %v: when it runs out, a late delivery of the event (a provider delivers again for hours, even days) charges the order again. A marker records a charge, it is not a lease: no TTL", id, marker(id), time.Duration(ms)*time.Millisecond)
	}

	// A delivery whose request ends during the charge (the provider hung
	// up): its claim must be given back all the same, or the provider's
	// next delivery skips the order.
	order++
	id = fmt.Sprint(order)
	s.Note("the provider hangs up during the first delivery's charge for order %s", id)
	if out := a.MustDo(deliver, id+" hangup"); out != "failed" {
		s.Violation("order %s: A's ChargeOnce returned (%s, nil) though its request's context ended during the charge: the charge's error was dropped", id, out)
	}
	if pttlOf(s, marker(id)) != -2 {
		s.Violation("order %s: A's request was cancelled during its charge, and its claim %s was left in Redis: given back with the request's context, which had ended, the DEL never went out, and the provider's next delivery skips the order. Give it back with a context that a cancelled request does not cancel (context.WithoutCancel)", id, marker(id))
	} else if b.MustDo(deliver, id); chargesOf(s, id) != 1 {
		s.Violation("order %s charged %s after a cancelled charge and a second delivery; want once", id, times(chargesOf(s, id)))
	}

	// Last, Redis refuses a delivery's writes: ChargeOnce must return the
	// error (the provider then delivers again), never "charged already".
	order++
	id = fmt.Sprint(order)
	c := s.Client("C", impl)
	s.RefuseWrites(true)
	out, err := c.Do(deliver, id)
	s.RefuseWrites(false)
	switch {
	case err == nil && out == "false":
		s.Violation("order %s: while Redis refused every write (NOREPLICAS), C's ChargeOnce answered \"charged already\" with no error: an error from Redis was dropped, the provider will not deliver again, and the order is never charged", id)
	case err == nil:
		s.Violation("order %s: C's ChargeOnce reported a charge while Redis refused every write (NOREPLICAS): an error from Redis must surface", id)
	}
	if n := chargesOf(s, id); n != 0 {
		s.Violation("order %s charged while Redis refused every write", id)
	}
}

// TestLab02_FixedChargeOnce proves the exercise's check passable, with a
// ChargeOnce that claims the order in one SET NX before it charges.
func TestLab02_FixedChargeOnce(t *testing.T) {
	labs.Safe(t, title, duplicateDeliveries, claimFirst)
}

func TestLab02_Exercise(t *testing.T) {
	labs.Exercise(t, title, duplicateDeliveries, exercise)
}

// deliveriesRace explores the exercise's first check: two deliveries of
// one event, A and B, each stopped before every Redis command after its
// first, in every order. The order must be charged once.
var deliveriesRace = labs.Race{
	Ops:      []string{deliver},
	Commands: 4,
	Actors: func(s *labs.Scene, impl *labs.Impl) []*labs.Actor {
		a, b := s.Client("A", impl), s.Client("B", impl)
		return []*labs.Actor{s.Actor(a, deliver+" 1001"), s.Actor(b, deliver+" 1001")}
	},
	Final: func(s *labs.Scene, _ []*labs.Actor) {
		if n := chargesOf(s, "1001"); n != 1 {
			s.Violation("order 1001 charged %s by two deliveries of one event; want once: the check and the mark must be one step on the server, taken before the charge", times(n))
		}
	},
}

var deliveriesExplored = labs.ExploreOpts{Exhaustive: true, Budget: 200}

func TestLab02_ExerciseExplored(t *testing.T) {
	labs.ExploreExercise(t, title, deliveriesRace, exercise, deliveriesExplored)
}

func TestLab02_FixedChargeOnceExplored(t *testing.T) {
	labs.ExploreFixed(t, title, deliveriesRace, claimFirst, deliveriesExplored)
}
