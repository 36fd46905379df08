package lab02_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/locklab/locklab/correct"
	"github.com/locklab/locklab/internal/history"
	"github.com/locklab/locklab/internal/retry"
	"github.com/locklab/locklab/labs"
	"github.com/locklab/locklab/naive"
)

func TestMain(m *testing.M) { labs.Main(m) }

const title = "Lab 02 (check then set)"

var (
	getThenSet = labs.GetThenSet
	setNX      = labs.Correct
	// setNXRush is the correct lock for the stress test: it retries a taken
	// lock after a random pause under 2ms, so 32 clients keep it busy.
	setNXRush = labs.Register("lab02-correct-rush", func(e *labs.Env) labs.Locker {
		return correct.New(e.Redis(0), e.Key, correct.WithTTL(e.TTL),
			correct.WithRetry(func(int) time.Duration { return rand.N(2 * time.Millisecond) }))
	})
)

// The protected resource: order 1001 and the number of times it was
// charged, kept in Redis where every client sees it.
const (
	order        = "order:1001"
	chargesField = "charges"
)

// charge is what a client does inside the critical section: it charges
// order 1001 (HINCRBY on the order's charge counter) and says so in its
// lane.
var charge = labs.RegisterOp("charge", func(ctx context.Context, l *labs.Local, _ string) (string, error) {
	n, err := l.Env.Redis(0).HIncrBy(ctx, order, chargesField, 1).Result()
	if err != nil {
		return "", err
	}
	l.Note("charge order 1001 (charge #%d)", n)
	return strconv.FormatInt(n, 10), nil
})

// charges reads how many times order 1001 was charged.
func charges(s *labs.Scene) int {
	n, err := s.Redis().HGet(s.Ctx, order, chargesField).Int()
	if errors.Is(err, redis.Nil) {
		return 0
	}
	s.Must(err)
	return n
}

// doubleCharge: the payment provider delivers the "paid" callback for
// order 1001 twice, and two instances of the checkout service, A and B,
// handle it at the same moment. Each takes the order's lock before it
// charges the customer.
func doubleCharge(s *labs.Scene, impl *labs.Impl) {
	a, b := s.Client("A", impl), s.Client("B", impl)

	// A lock that checks with GET stops both clients right after the GET
	// found the key empty: A first, then B, so both have seen it free
	// before either takes it. A lock that checks and takes in one command
	// has no such step and simply answers.
	a.ParkAt(naive.HookAfterGetEmpty)
	b.ParkAt(naive.HookAfterGetEmpty)
	tryA := a.Go("trylock", "")
	_, parkedA := a.WaitParkedOr(tryA, naive.HookAfterGetEmpty)
	tryB := b.Go("trylock", "")
	_, parkedB := b.WaitParkedOr(tryB, naive.HookAfterGetEmpty)
	if parkedA && parkedB {
		s.Note("A and B both found %s free", s.Key)
	}

	// A takes the lock, then B: each SET lands after both checks.
	if parkedA {
		a.Continue()
	}
	gotA := acquired(s, tryA)
	if parkedB {
		b.Continue()
	}
	gotB := acquired(s, tryB)
	if gotA && gotB {
		holder, err := s.Redis().Get(s.Ctx, s.Key).Result()
		s.Must(err)
		s.Note("%s now holds %s: B's SET overwrote A's token", s.Key, holder)
	}

	// Whoever got the lock charges the order.
	var holders []*labs.Client
	if gotA {
		holders = append(holders, a)
	}
	if gotB {
		holders = append(holders, b)
	}
	for _, c := range holders {
		c.Enter()
		_, err := c.Do(charge, "")
		s.Must(err)
	}
	for _, c := range holders {
		c.Exit()
		c.Release() // "not held" is on the timeline: B's SET overwrote A's token
	}
	s.Note("order 1001 charged %s", times(charges(s)))
}

// acquired waits for a TryLock call and reports whether it took the lock.
func acquired(s *labs.Scene, call *labs.Call) bool {
	out, err := call.Result()
	s.Must(err)
	return out == "true"
}

func times(n int) string {
	switch n {
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return fmt.Sprintf("%d times", n)
}

func TestLab02_BrokenBothSeeItFree(t *testing.T) {
	labs.Broken(t, title, doubleCharge, getThenSet)
}

func TestLab02_FixedSetNXLetsOneIn(t *testing.T) {
	labs.Fixed(t, title, doubleCharge, setNX)
}

// Stress: no forced interleaving this time, only many clients at once.
const (
	rushClients = 32
	rushRounds  = 50               // acquisitions per client
	rushBudget  = 10 * time.Second // a slow machine stops early and judges what ran
)

// rush: 32 clients each take the lock rushRounds times, charging order
// 1001 inside, as fast as the lock lets them.
func rush(s *labs.Scene, impl *labs.Impl) {
	ctx, cancel := context.WithTimeout(s.Ctx, rushBudget)
	defer cancel()
	var g errgroup.Group
	for i := range rushClients {
		l := s.Local(fmt.Sprintf("c%02d", i+1), impl)
		g.Go(func() error {
			for range rushRounds {
				if err := l.Lock(ctx); err != nil {
					// Out of time: judge what ran. ctx.Err() alone
					// would miss a lock that saw the deadline pass
					// before ctx's timer fired.
					if retry.CtxErr(ctx) != nil {
						return nil
					}
					return err
				}
				// An acquisition the budget let in runs to its end:
				// the budget bounds waiting, not the critical section.
				l.Enter()
				if _, err := l.Do(s.Ctx, charge, ""); err != nil {
					return err
				}
				l.Exit()
				if err := l.Unlock(s.Ctx); err != nil && !labs.NotHeld(err) {
					return err
				}
			}
			return nil
		})
	}
	s.Must(g.Wait())
	s.Note("order 1001 charged %s", times(charges(s)))
}

// TestLab02_FixedUnderStress runs the correct lock with no help from the
// step controller: 32 clients, each locking 50 times. SET NX must let
// exactly one in at a time, every time.
func TestLab02_FixedUnderStress(t *testing.T) {
	underStress(t, "fixed", setNXRush)
}

// underStress runs rush against impl and passes if it shows no overlap.
func underStress(t *testing.T, label string, impl *labs.Impl) {
	t.Helper()
	start := time.Now()
	events, findings := labs.Run(t, rush, impl)
	var acquisitions, charged int
	for _, e := range events {
		switch {
		case e.Kind == history.Acquire && e.OK:
			acquisitions++
		case e.Kind == history.Note && e.Client != "":
			charged++
		}
	}
	head := fmt.Sprintf("%s %s, %d clients at once: ", title, label, rushClients)
	stats := fmt.Sprintf("%4.1fs  %d acquisitions  %d events", time.Since(start).Seconds(), acquisitions, len(events))
	switch {
	case len(findings) > 0:
		fmt.Printf("%s%s ... FAIL  %s\n", head, labs.Plural(len(findings), "violation"), stats)
		t.Fatalf("%s%s; the first one:\n%s", head, labs.Plural(len(findings), "violation"), closeUp(events, findings[0]))
	case acquisitions < rushClients:
		fmt.Printf("%sno violation, but too few acquisitions ... FAIL  %s\n", head, stats)
		t.Fatalf("%sonly %d acquisitions in %v: too few to prove anything", head, acquisitions, rushBudget)
	case charged != acquisitions:
		t.Fatalf("%s%d acquisitions but %d charges", head, acquisitions, charged)
	}
	fmt.Printf("%sno violation ... ok  %s\n", head, stats)
}

// closeUp renders the timeline of the two clients in finding f, from the
// moment the first of them entered the critical section to just after the
// overlap: 32 lanes of 1,600 acquisitions would bury it.
func closeUp(events []history.Event, f history.Finding) string {
	from := f.From
	for _, e := range events { // the first client entered before f.From
		if e.Kind == history.Enter && e.Client == f.Clients[0] && e.At <= f.From {
			from = e.At
		}
	}
	var near []history.Event
	for _, e := range events {
		if slices.Contains(f.Clients, e.Client) && e.At >= from && e.At <= f.To+time.Millisecond {
			near = append(near, e)
		}
	}
	return history.Render(near, []history.Finding{f})
}

// doubleChargeRace is doubleCharge explored: A and B each try the lock
// once and, if they got it, charge the order and release, in every order
// of their steps and of their stops after a GET that found the key free.
var doubleChargeRace = labs.Race{
	Points:   []string{naive.HookAfterGetEmpty},
	Commands: 3,
	Actors: func(s *labs.Scene, impl *labs.Impl) []*labs.Actor {
		a, b := s.Client("A", impl), s.Client("B", impl)
		return []*labs.Actor{
			s.Actor(a, "trylock", "enter+"+charge, "exit+unlock"),
			s.Actor(b, "trylock", "enter+"+charge, "exit+unlock"),
		}
	},
}

var doubleChargeExplored = labs.ExploreOpts{Exhaustive: true, Budget: 400}

func TestLab02_BrokenBothSeeItFreeExplored(t *testing.T) {
	labs.ExploreBroken(t, title, doubleChargeRace, getThenSet, doubleChargeExplored)
}

func TestLab02_FixedSetNXLetsOneInExplored(t *testing.T) {
	labs.ExploreFixed(t, title, doubleChargeRace, setNX, doubleChargeExplored)
}
