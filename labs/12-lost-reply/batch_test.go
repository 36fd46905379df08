package lab12_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/labs"
	lab12 "github.com/locklab/locklab/labs/12-lost-reply"
	"github.com/locklab/locklab/naive"
	"github.com/locklab/locklab/reentrant"
)

// The lost batch (issue 38): the order service on go-redis's
// AutoPipeliner, which batches the commands of all its goroutines into
// one pipeline. The proxy lets a whole batch through, Redis runs every
// command in it, and the proxy cuts the connection before any reply comes
// back: the AutoPipeliner sends the whole batch again. One lost batch is
// every order's command sent twice at once.

const titleBatch = "Lab 12 (a batch lost, every order's command sent twice)"

// orders is how many orders A's service works on at once, each under its
// own lock: one goroutine per order, one batch of the AutoPipeliner.
const orders = 8

// batchOptions make the AutoPipeliner's batches the lab's: one queue
// (NumShards 1) flushed when all the orders' commands are in it
// (MaxBatchSize), so that a batch holds one command of every order, in
// every run. The flush window only bounds a batch that never fills; on its
// default options the AutoPipeliner batches the same way under load, just
// not predictably.
var batchOptions = redis.AutoPipelineOptions{
	MaxBatchSize:         orders,
	MaxConcurrentBatches: 1,
	NumShards:            1,
	MaxFlushDelay:        2 * time.Second,
}

// fleet is a client's locks on the orders, one call path each: A's on
// the AutoPipeliner (go-redis's default options, through the proxy), B's
// on a plain client of its own.
type fleet struct {
	key   string // order i's lock is key:phase:i
	make  func(key string) labs.Locker
	mu    sync.Mutex
	locks map[string]labs.Locker
}

// lock returns order i's lock in phase.
func (f *fleet) lock(phase string, i int) labs.Locker {
	key := fmt.Sprintf("%s:%s:%d", f.key, phase, i)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.locks[key] == nil {
		f.locks[key] = f.make(key)
	}
	return f.locks[key]
}

// The harness's own lock operations are not used on a fleet.
func (f *fleet) Lock(context.Context) error {
	return errors.New("lab12: a fleet locks with orders-lock")
}
func (f *fleet) TryLock(context.Context) (bool, error) {
	return false, errors.New("lab12: a fleet tries with orders-try")
}
func (f *fleet) Unlock(context.Context) error {
	return errors.New("lab12: a fleet unlocks with orders-unlock")
}

// newFleet makes a fleet of the locks newLock builds; a client on
// go-redis's default options (A) gets them on an AutoPipeliner.
func newFleet(newLock func(c lab12.Client, key string, ttl time.Duration) labs.Locker) func(e *labs.Env) labs.Locker {
	return func(e *labs.Env) labs.Locker {
		var c lab12.Client = e.Redis(0)
		if e.Defaults {
			opts := batchOptions
			ap, err := e.Redis(0).AutoPipelineWithOptions(&opts)
			if err != nil {
				return labs.Failing(err)
			}
			e.Defer(func() { _ = ap.Close() })
			c = ap
		}
		return &fleet{key: e.Key, locks: map[string]labs.Locker{}, make: func(key string) labs.Locker {
			return labs.NewCallPath(newLock(c, key, e.TTL))
		}}
	}
}

var (
	// batchCounted is lab 06's counted lock (naive.Counted): every run
	// counts.
	batchCounted = labs.Register("lab12-batch-counted", newFleet(func(c lab12.Client, key string, ttl time.Duration) labs.Locker {
		return naive.NewCounted(c.(naive.Client), key, naive.WithTTL(ttl))
	}))
	// batchReentrant is package reentrant's Mutex: an id and a receipt
	// per call.
	batchReentrant = labs.Register("lab12-batch-reentrant", newFleet(func(c lab12.Client, key string, ttl time.Duration) labs.Locker {
		return reentrant.New(c, key, reentrant.WithTTL(ttl))
	}))
	batchExercise = labs.Register("lab12-batch-exercise", newFleet(func(c lab12.Client, key string, ttl time.Duration) labs.Locker {
		return lab12.NewExercise(c, key, ttl)
	}))
)

// each runs do for every order of phase at once, one goroutine each, and
// returns their errors.
func each(f *fleet, phase string, do func(labs.Locker) error) []error {
	errs := make([]error, orders)
	var wg sync.WaitGroup
	for i := range orders {
		l := f.lock(phase, i)
		wg.Go(func() { errs[i] = do(l) })
	}
	wg.Wait()
	return errs
}

// tally says how the orders' calls answered: "8 ok", "3 ok, 5 not held".
func tally(errs []error) (ok, notHeld int, other error) {
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case labs.NotHeld(err) || errors.Is(err, lab12.ErrNotHeld) || errors.Is(err, naive.ErrNotHeld) || errors.Is(err, reentrant.ErrNotHeld):
			notHeld++
		default:
			other = err
		}
	}
	return ok, notHeld, other
}

// Operations on a fleet; the argument is the phase (each phase has its
// own orders).
var (
	// ordersLock locks every order of the phase at once, once more for
	// each (a reentrant call), and answers how many it holds.
	ordersLock = labs.RegisterOp("orders-lock", func(ctx context.Context, l *labs.Local, phase string) (string, error) {
		f := l.Locker.(*fleet)
		errs := each(f, phase, func(m labs.Locker) error { return m.Lock(ctx) })
		ok, _, err := tally(errs)
		if err != nil || ok != orders {
			return "", fmt.Errorf("%s locked %d of %d orders: %v", l.Name, ok, orders, errors.Join(errs...))
		}
		return strconv.Itoa(ok), nil
	})
	// ordersUnlock unlocks every order of the phase at once, and answers
	// how many Unlocks returned nil and how many "not held".
	ordersUnlock = labs.RegisterOp("orders-unlock", func(ctx context.Context, l *labs.Local, phase string) (string, error) {
		f := l.Locker.(*fleet)
		ok, notHeld, err := tally(each(f, phase, func(m labs.Locker) error { return m.Unlock(ctx) }))
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%d %d", ok, notHeld), nil
	})
	// ordersTry tries every order of the phase once, gives back what it
	// got, and answers how many it got.
	ordersTry = labs.RegisterOp("orders-try", func(ctx context.Context, l *labs.Local, phase string) (string, error) {
		f := l.Locker.(*fleet)
		var mu sync.Mutex
		got := 0
		errs := each(f, phase, func(m labs.Locker) error {
			ok, err := m.TryLock(ctx)
			if err != nil || !ok {
				return err
			}
			mu.Lock()
			got++
			mu.Unlock()
			return m.Unlock(ctx)
		})
		if err := errors.Join(errs...); err != nil {
			return "", err
		}
		return strconv.Itoa(got), nil
	})
)

// batchLink is A's way to Redis: the proxy, which loses one batch when
// armed.
type batchLink struct {
	p    *faultproxy.Proxy
	drop *faultproxy.Rule
}

// batchLatency delays A's commands in the proxy while it waits for the
// batch to lose. The proxy's batch ends at the first reply that comes
// back: with no delay, on a loaded machine, Redis can answer the batch's
// first command before the proxy has read the rest of it (1 batch in 100
// or so, measured under -race), and the lost batch holds only part of the
// orders. 20 ms lets the proxy read the whole batch first.
const batchLatency = 20 * time.Millisecond

// attempts bounds the tries at a whole lost batch in one phase: a phase
// whose lost batch held only part of the orders is run again on fresh
// orders, and shows nothing. Besides the proxy's race above, the first
// lost batches of a run were sent apart (a batch of 1, or of 7, a few
// tries in a row in 3 runs of 8 without -race), which the warm-up's own
// lost batch now absorbs; the bound is generous.
const attempts = 30

// loseNextBatch arms the proxy to lose A's next batch.
func (l *batchLink) loseNextBatch() {
	l.p.SetLatency(batchLatency)
	l.drop = l.p.DropBatch(faultproxy.Match{}, 1)
}

// whole reports whether the batch was lost whole, one command of every
// order in it, and disarms the proxy.
func (l *batchLink) whole() (bool, []string) {
	defer l.drop.Remove()
	l.p.SetLatency(0)
	caught := l.drop.Caught()
	return len(caught) == orders, caught
}

// shown is what a phase puts on the timeline, kept until the phase's lost
// batch is known to have been whole: a line in a client's lane or the
// faults', or a violation.
type shown struct {
	lines []func()
}

func (sh *shown) note(c *labs.Client, format string, args ...any) {
	text := fmt.Sprintf(format, args...)
	sh.lines = append(sh.lines, func() { c.Note(text) })
}

func (sh *shown) fault(s *labs.Scene, format string, args ...any) {
	text := fmt.Sprintf(format, args...)
	sh.lines = append(sh.lines, func() { s.Fault("%s", text) })
}

func (sh *shown) violation(s *labs.Scene, format string, args ...any) {
	text := fmt.Sprintf(format, args...)
	sh.lines = append(sh.lines, func() { s.Violation("%s", text) })
}

// batchPhase runs one phase on fresh orders until its lost batch was
// whole (at most attempts times), then shows what that run did.
func batchPhase(s *labs.Scene, l *batchLink, name string, run func(phase string, sh *shown, lose func(what string) bool)) {
	s.T().Helper()
	var last []string
	for k := range attempts {
		sh := &shown{}
		ok := true
		phase := fmt.Sprintf("%s.%d", name, k)
		armed := false
		run(phase, sh, func(what string) bool {
			if !armed {
				armed = true
				l.loseNextBatch()
				sh.fault(s, "the proxy will lose A's next batch (%s): it lets it through, Redis runs it, then it cuts A's connection before any reply", what)
				return true
			}
			var caught []string
			ok, caught = l.whole()
			last = caught
			if ok {
				sh.fault(s, "batch of %d commands lost; the AutoPipeliner sent all %d again: Redis ran each twice", len(caught), len(caught))
			}
			return ok
		})
		if ok {
			for _, show := range sh.lines {
				show()
			}
			return
		}
	}
	s.Fatalf("labs: harness went blind: in %d tries the lost batch never held one command of each of the %d orders (the last held %d: %s)", attempts, orders, len(last), strings.Join(last, ", "))
}

// lostBatch: A, the order service, works on 8 orders at once through the
// AutoPipeliner; each order is processOrder and reserveStock, which locks
// it too (lab 06's story, 8 times over). The proxy loses three batches,
// each in a phase of its own orders: reserveStock's 8 Unlocks, then
// reserveStock's 8 Locks, then processOrder's 8 last Unlocks. Each is
// judged on the orders: B (another request, on its own connection) must be
// refused every order processOrder still holds, and get every order A has
// unlocked as often as it locked; an Unlock that released its order must
// say so.
func lostBatch(s *labs.Scene, impl *labs.Impl) {
	s.TTL = lease
	l := &batchLink{p: faultproxy.Start(s.T(), s.Node().Addr())}
	a := s.Client("A", impl, labs.Addrs(l.p.Addr()), labs.GoRedisDefaults())
	b := s.Client("B", impl)

	a.Note(fmt.Sprintf("%d orders at once, one goroutine each, on one AutoPipeliner: first Lock and Unlock each, which load the scripts", orders))
	a.MustDo(ordersLock, "warm")
	// The first batch the proxy loses in a run is often sent apart (a
	// batch of 1 or 7: the AutoPipeliner after its first broken
	// connection, measured without -race in 6 runs of 15); a lost batch
	// of the warm-up, not judged nor shown, takes that turn.
	l.loseNextBatch()
	unlock(s, a, "warm")
	l.whole()
	a.Note(fmt.Sprintf("Unlock of each order: %d nil, 0 not held", orders))

	// Phase 1: reserveStock's Unlocks sent twice. processOrder still
	// holds every order.
	batchPhase(s, l, "1", func(p string, sh *shown, lose func(string) bool) {
		sh.note(a, "processOrder locks each order, and reserveStock locks it too")
		a.MustDo(ordersLock, p)
		a.MustDo(ordersLock, p)
		lose("reserveStock's 8 Unlocks")
		ok, notHeld := unlock(s, a, p)
		if !lose("") {
			return
		}
		sh.note(a, "Unlock of each order: %d nil, %d not held", ok, notHeld)
		if notHeld > 0 {
			sh.violation(s, "%d of A's %d Unlocks answered \"not held\" although A held each order: a call before took back a hold it should not have", notHeld, ok+notHeld)
		}
		n := try(s, b, p)
		sh.note(b, "B tries each order: got %d of %d", n, orders)
		if n > 0 {
			sh.violation(s, "B took %d of %d orders while processOrder held every one: two holders. reserveStock's Unlocks ran twice (their batch was lost, and the AutoPipeliner sent it again), and each took back processOrder's hold too", n, orders)
		}
		ok, notHeld = unlock(s, a, p)
		sh.note(a, "Unlock of each order: %d nil, %d not held", ok, notHeld)
		if notHeld > 0 && n == 0 { // with B in, processOrder's finds the same cause
			sh.violation(s, "%d of A's %d Unlocks answered \"not held\" although A held each order: a call before took back a hold it should not have", notHeld, ok+notHeld)
		}
	})

	// Phase 2: reserveStock's Locks sent twice. A then unlocks as often
	// as it locked, and every order must be free.
	batchPhase(s, l, "2", func(p string, sh *shown, lose func(string) bool) {
		sh.note(a, "processOrder locks each order, and reserveStock locks it too")
		a.MustDo(ordersLock, p)
		lose("reserveStock's 8 Locks")
		a.MustDo(ordersLock, p)
		if !lose("") {
			return
		}
		for range 2 {
			ok, notHeld := unlock(s, a, p)
			sh.note(a, "Unlock of each order: %d nil, %d not held", ok, notHeld)
			if notHeld > 0 {
				sh.violation(s, "%d of A's %d Unlocks answered \"not held\" although A held each order: a call before took back a hold it should not have", notHeld, ok+notHeld)
			}
		}
		n := try(s, b, p)
		sh.note(b, "B tries each order: got %d of %d", n, orders)
		if n < orders {
			sh.violation(s, "B was refused %d of %d orders that nobody holds: A unlocked each as often as it locked, but reserveStock's Locks ran twice (their batch was lost, and the AutoPipeliner sent it again) and counted twice. Those orders stay locked until their lease runs out (%v)", orders-n, orders, lease)
		}
	})

	// Phase 3: processOrder's last Unlocks sent twice. Each released its
	// order the first time; the second run must answer the same.
	batchPhase(s, l, "3", func(p string, sh *shown, lose func(string) bool) {
		sh.note(a, "processOrder locks each order, once")
		a.MustDo(ordersLock, p)
		lose("processOrder's 8 Unlocks")
		ok, notHeld := unlock(s, a, p)
		if !lose("") {
			return
		}
		sh.note(a, "Unlock of each order: %d nil, %d not held", ok, notHeld)
		if notHeld > 0 {
			sh.violation(s, "%d of processOrder's %d Unlocks answered \"not held\", though each released its order: the first run released it, the reply was lost with its batch, and the second run found nothing to release. A release reported failed that succeeded: a second run must answer what the first one did", notHeld, ok+notHeld)
		}
		n := try(s, b, p)
		sh.note(b, "B tries each order: got %d of %d", n, orders)
		if n < orders {
			sh.violation(s, "B was refused %d of %d orders after processOrder unlocked them", orders-n, orders)
		}
	})
}

// unlock runs A's Unlocks of a phase and returns their answers.
func unlock(s *labs.Scene, a *labs.Client, phase string) (ok, notHeld int) {
	s.T().Helper()
	out := a.MustDo(ordersUnlock, phase)
	_, err := fmt.Sscanf(out, "%d %d", &ok, &notHeld)
	s.Must(err)
	return ok, notHeld
}

// try has B try every order of a phase once, and returns how many it got.
func try(s *labs.Scene, b *labs.Client, phase string) int {
	s.T().Helper()
	n, err := strconv.Atoi(b.MustDo(ordersTry, phase))
	s.Must(err)
	return n
}

func TestLab12_BrokenLostBatchCountsTwice(t *testing.T) {
	labs.Broken(t, titleBatch, lostBatch, batchCounted)
}

func TestLab12_FixedLostBatchCountsOnce(t *testing.T) {
	labs.Fixed(t, titleBatch, lostBatch, batchReentrant)
}

func TestLab12_ExerciseLostBatch(t *testing.T) {
	labs.Exercise(t, titleBatch, lostBatch, batchExercise)
}
