// Package locktest holds, for tests only, the scenarios that the lock
// packages on etcd, ZooKeeper and PostgreSQL (etcdlock, zklock, pglock)
// share, written once and run by each package's own tests against its own
// server, as testing/fstest.TestFS is run by every file system: the basics
// of a lock (invalid arguments, one holder, fencing tokens that grow, a
// line served in order, giving up while waiting, the observer, contention,
// a leader's failover). Each package describes itself as a [Kind] and calls
// [Run]; what is particular to it (its sessions, its faults) stays in its
// own tests.
//
// [Locker], [Bound] and [Turns], the mutual-exclusion count, also serve
// the Redis locks' tests, as do the steps they share: [RefusesInvalid],
// [Context], [Warm], [Signal], [LockQueued], [GiveUp], and, in scripts.go,
// the helpers on a Redis server and its fault proxy.
package locktest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/locklab/locklab/internal/leakcheck"
	"github.com/locklab/locklab/internal/observetest"
	"github.com/locklab/locklab/observe"
)

// Locker is what every lock kind offers.
type Locker interface {
	Lock(ctx context.Context) error
	TryLock(ctx context.Context) (bool, error)
	Unlock(ctx context.Context) error
}

// Extender is a lock whose hold can be extended.
type Extender interface {
	Locker
	Extend(ctx context.Context, ttl time.Duration) error
}

// Bound is L with every call's context passed through Bind first:
// reentrant's Mutex, run as one Owner, is a Bound whose Bind puts the
// Owner in the context.
type Bound struct {
	L    Extender
	Bind func(context.Context) context.Context
}

func (b Bound) Lock(ctx context.Context) error            { return b.L.Lock(b.Bind(ctx)) }
func (b Bound) TryLock(ctx context.Context) (bool, error) { return b.L.TryLock(b.Bind(ctx)) }
func (b Bound) Unlock(ctx context.Context) error          { return b.L.Unlock(b.Bind(ctx)) }
func (b Bound) Extend(ctx context.Context, ttl time.Duration) error {
	return b.L.Extend(b.Bind(ctx), ttl)
}

// Fenced is a lock whose holds carry a fencing token (0 when not held).
type Fenced interface {
	Locker
	Fence() uint64
}

// Options are what a scenario wires into the lock it makes: either may be
// nil.
type Options struct {
	Hook     func(ctx context.Context, point string)
	Observer observe.Func
}

// Kind is one lock package under test, on connections of type C (an etcd
// client, a ZooKeeper session, a PostgreSQL pool).
type Kind[C any] struct {
	// Name is the lock's name in its observer's events.
	Name string
	// Conn returns a new connection to the package's shared test server,
	// closed when the test ends.
	Conn func(t *testing.T) C
	// New makes a lock on key over conn.
	New func(conn C, key string, o Options) Fenced
	// The package's sentinels.
	ErrNotHeld, ErrNotObtained error
	// Line returns the claims in key's line, oldest (the holder's) first,
	// as Claim names them. It is nil for a kind whose server keeps its
	// waiters out of sight (PostgreSQL's lock manager).
	Line func(t testing.TB, conn C, key string) []string
	// Claim returns the name of l's current claim, "" when it holds
	// nothing (with Line).
	Claim func(l Fenced) string
	// HookClaimed is the hook point at which Lock's claim is in line and
	// it starts to wait; "" for a kind without one.
	HookClaimed string
	// Waiting, for a kind without HookClaimed, is how a test sees from
	// outside that a Lock on key, about to be made through faulty, was
	// refused and now waits: it is called before that Lock starts and
	// returns a function that blocks until the server shows it waiting
	// (Redis: the Lock's second command on the key, so its first was
	// refused; PostgreSQL: a session waiting on a lock), or ctx ends.
	// [UserWorld] requires one of HookClaimed and Waiting.
	Waiting func(t *testing.T, faulty C, key string) (seen func(ctx context.Context) error)
	// Detach bounds how long the lock may stay taken after an Unlock
	// that failed or gave up (its reply lost, its ctx ended) when its
	// caller does nothing more, as many workers do: the time the kind
	// takes to withdraw the claim on its own (a claim on a session that
	// outlives the hold). 0: the World's Recover (the lease or the
	// session timeout, with a margin). [UserWorld] checks it.
	Detach time.Duration
	// Fenceless says the lock hands out no fencing token (its Fence
	// always returns 0): the checks of tokens are skipped.
	Fenceless bool
}

// Run runs the scenarios below that apply to k as subtests named for
// them, each on a fresh key from key and checked for leaked goroutines.
func Run[C any](t *testing.T, k Kind[C], key func(t testing.TB) string) {
	for _, sc := range []struct {
		name  string
		run   func(t *testing.T, k Kind[C], key string)
		needs bool
	}{
		{"NeverLockedUnlock", NeverLockedUnlock[C], true},
		{"LockUnlockAndFence", LockUnlockAndFence[C], true},
		{"WaitersServedInOrder", WaitersServedInOrder[C], k.Line != nil},
		{"GiveUpWhileWaiting", GiveUpWhileWaiting[C], true},
		{"Observer", Observer[C], true},
		{"Contention", Contention[C], true},
	} {
		if !sc.needs {
			continue
		}
		t.Run(sc.name, func(t *testing.T) {
			leakcheck.Guard(t)
			sc.run(t, k, key(t))
		})
	}
}

// RefusesInvalid checks that each of cases, locks made with bad arguments
// and named for them, returns an error wrapping errInvalid from Lock,
// TryLock and Unlock, and from Extend(ctx, 1s) for a lock that has it.
// Then also, if not nil, checks in the same subtest what else the kind
// must refuse or report for the case.
func RefusesInvalid[L Locker](t *testing.T, errInvalid error, cases map[string]L, also func(t *testing.T, l L)) {
	ctx := context.Background()
	for _, name := range slices.Sorted(maps.Keys(cases)) {
		l := cases[name]
		t.Run(name, func(t *testing.T) {
			if err := l.Lock(ctx); !errors.Is(err, errInvalid) {
				t.Errorf("Lock = %v; want ErrInvalid", err)
			}
			if ok, err := l.TryLock(ctx); ok || !errors.Is(err, errInvalid) {
				t.Errorf("TryLock = %v, %v; want false, ErrInvalid", ok, err)
			}
			if err := l.Unlock(ctx); !errors.Is(err, errInvalid) {
				t.Errorf("Unlock = %v; want ErrInvalid", err)
			}
			if e, ok := any(l).(Extender); ok {
				if err := e.Extend(ctx, time.Second); !errors.Is(err, errInvalid) {
					t.Errorf("Extend = %v; want ErrInvalid", err)
				}
			}
			if also != nil {
				also(t, l)
			}
		})
	}
}

// NeverLockedUnlock: Unlock of a lock that never held says ErrNotHeld, and
// its Done (for a kind that has one) is closed.
func NeverLockedUnlock[C any](t *testing.T, k Kind[C], key string) {
	m := k.New(k.Conn(t), key, Options{})
	if err := m.Unlock(context.Background()); !errors.Is(err, k.ErrNotHeld) {
		t.Errorf("Unlock of a never locked Mutex = %v; want ErrNotHeld", err)
	}
	if d, ok := m.(interface{ Done() <-chan struct{} }); ok {
		select {
		case <-d.Done():
		default:
			t.Error("Done() of a Mutex that holds nothing is not closed")
		}
	}
}

// LockUnlockAndFence: a holds, b is refused (and leaves no claim); a
// releases, and forgets its hold; a second Unlock says ErrNotHeld; b gets
// the lock with a larger fencing token; nothing is left in line.
func LockUnlockAndFence[C any](t *testing.T, k Kind[C], key string) {
	c := k.Conn(t)
	ctx := context.Background()
	a, b := k.New(c, key, Options{}), k.New(c, key, Options{})

	if err := a.Lock(ctx); err != nil {
		t.Fatalf("a.Lock = %v", err)
	}
	fa := a.Fence()
	if fa == 0 {
		t.Fatal("a.Fence() = 0 while held")
	}
	if ok, err := b.TryLock(ctx); ok || err != nil {
		t.Fatalf("b.TryLock while a holds = %v, %v; want false, nil", ok, err)
	}
	if k.Line != nil {
		if got := k.Line(t, c, key); len(got) != 1 || got[0] != k.Claim(a) {
			t.Fatalf("claims after b's refused TryLock = %q; want only a's %q", got, k.Claim(a))
		}
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatalf("a.Unlock = %v", err)
	}
	if a.Fence() != 0 {
		t.Errorf("a.Fence() = %d after Unlock; want 0", a.Fence())
	}
	if k.Claim != nil && k.Claim(a) != "" {
		t.Errorf("a's claim after Unlock = %q; want \"\"", k.Claim(a))
	}
	if err := a.Unlock(ctx); !errors.Is(err, k.ErrNotHeld) {
		t.Errorf("second a.Unlock = %v; want ErrNotHeld", err)
	}
	if ok, err := b.TryLock(ctx); !ok || err != nil {
		t.Fatalf("b.TryLock after a released = %v, %v; want true, nil", ok, err)
	}
	if fb := b.Fence(); fb <= fa {
		t.Errorf("b.Fence() = %d after a's %d; want larger", fb, fa)
	}
	if err := b.Unlock(ctx); err != nil {
		t.Fatalf("b.Unlock = %v", err)
	}
	if k.Line != nil {
		if got := k.Line(t, c, key); len(got) != 0 {
			t.Errorf("claims after both released = %q; want none", got)
		}
	}
}

// WaitersServedInOrder: waiters queue in the order their claims were
// written (each starts once the one before is in line), and each release
// wakes the next one. For a kind with a Line.
func WaitersServedInOrder[C any](t *testing.T, k Kind[C], key string) {
	c := k.Conn(t)
	ctx := context.Background()
	holder := k.New(c, key, Options{})
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		order []int
	)
	var g errgroup.Group
	for i := range 4 {
		w := k.New(c, key, Options{})
		g.Go(func() error {
			if err := w.Lock(ctx); err != nil {
				return err
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			return w.Unlock(ctx)
		})
		Eventually(t, 10*time.Second, "waiter's claim appears", func() bool { return len(k.Line(t, c, key)) == i+2 })
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	if want := []int{0, 1, 2, 3}; !slices.Equal(order, want) {
		t.Errorf("waiters got the lock in order %v; want %v", order, want)
	}
}

// GiveUpWhileWaiting: a Lock whose ctx ends while it is in line (cancelled
// right after its claim is written, for a kind with HookClaimed; past its
// deadline) returns ErrNotObtained joined with the ctx error, as does a
// Lock with a ctx that has already ended. It leaves no claim behind, so
// the next client gets the lock once the holder releases.
func GiveUpWhileWaiting[C any](t *testing.T, k Kind[C], key string) {
	c := k.Conn(t)
	holder, next := k.New(c, key, Options{}), k.New(c, key, Options{})
	if err := holder.Lock(context.Background()); err != nil {
		t.Fatal(err)
	}
	onlyHolder := func(when string) {
		t.Helper()
		if k.Line == nil {
			return
		}
		if got := k.Line(t, c, key); len(got) != 1 || got[0] != k.Claim(holder) {
			t.Errorf("claims %s = %q; want only the holder's %q", when, got, k.Claim(holder))
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := k.New(c, key, Options{Hook: func(_ context.Context, point string) {
		if point == k.HookClaimed {
			cancel() // the caller gives up right after its claim is written
		}
	}})
	if k.HookClaimed != "" {
		err := w.Lock(ctx)
		if !errors.Is(err, k.ErrNotObtained) || !errors.Is(err, context.Canceled) {
			t.Fatalf("Lock cancelled in line = %v; want ErrNotObtained and context.Canceled", err)
		}
		onlyHolder("after the waiter gave up")
		// A ctx that has already ended sends nothing.
		if err := w.Lock(ctx); !errors.Is(err, k.ErrNotObtained) || !errors.Is(err, context.Canceled) {
			t.Errorf("Lock with an ended ctx = %v; want ErrNotObtained and context.Canceled", err)
		}
	}
	dctx, dcancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer dcancel()
	if err := w.Lock(dctx); !errors.Is(err, k.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock past its deadline = %v; want ErrNotObtained and context.DeadlineExceeded", err)
	}
	if err := w.Lock(dctx); !errors.Is(err, k.ErrNotObtained) {
		t.Errorf("Lock with an ended ctx = %v; want ErrNotObtained", err)
	}
	onlyHolder("after the timed-out Lock")
	if err := holder.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
	Eventually(t, 5*time.Second, "the next client gets the lock", func() bool {
		ok, err := next.TryLock(context.Background())
		return ok && err == nil
	})
	_ = next.Unlock(context.Background())
}

// Observer: the lock reports an acquisition and a release (a TryLock of
// another lock in between reports nothing to this one's observer), a
// give-up when Lock's ctx has ended, and nothing for an Unlock of a lock
// it does not hold.
func Observer[C any](t *testing.T, k Kind[C], key string) {
	rec := observetest.New()
	c := k.Conn(t)
	ctx := context.Background()
	m := k.New(c, key, Options{Observer: rec.Observe})
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := k.New(c, key, Options{}).TryLock(ctx); ok || err != nil {
		t.Fatalf("TryLock while held = %v, %v", ok, err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	rec.Expect(t, "Lock, Unlock", k.Name, key, "acquired released")
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_ = m.Lock(cctx)
	rec.Expect(t, "Lock with an ended ctx", k.Name, key, "gave-up")
	if err := m.Unlock(ctx); !errors.Is(err, k.ErrNotHeld) {
		t.Fatalf("Unlock not held = %v", err)
	}
	rec.Expect(t, "Unlock not held", k.Name, key, "")
}

// Contention: six locks on one key, over two connections, take it five
// times each; the critical section is never shared, and (for a kind with
// a Line) nothing is left in line at the end.
func Contention[C any](t *testing.T, k Kind[C], key string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs := []C{k.Conn(t), k.Conn(t)}
	var locks []Locker
	for i := range 6 {
		locks = append(locks, k.New(cs[i%2], key, Options{}))
	}
	most, total, err := Turns(ctx, locks, 5, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if most != 1 || total != 30 {
		t.Errorf("max holders at once %d, acquisitions %d; want 1, 30", most, total)
	}
	if k.Line != nil {
		if got := k.Line(t, cs[0], key); len(got) != 0 {
			t.Errorf("claims left = %q", got)
		}
	}
}

// Turns has each of locks, in a goroutine of its own, take the lock
// rounds times, holding it for hold each time, and counts who is inside
// the critical section. It returns the most holders seen at once (1 for a
// lock that excludes) and the acquisitions made, or the first error of a
// Lock or Unlock, saying which lock's and which turn's.
func Turns(ctx context.Context, locks []Locker, rounds int, hold time.Duration) (most, total int, err error) {
	var (
		mu     sync.Mutex // guards the counters, not the lock's work
		inside int
	)
	var g errgroup.Group
	for i, m := range locks {
		g.Go(func() error {
			for r := range rounds {
				if err := m.Lock(ctx); err != nil {
					return fmt.Errorf("lock %d, turn %d: Lock: %w", i, r, err)
				}
				mu.Lock()
				inside++
				most = max(most, inside)
				total++
				mu.Unlock()
				if hold > 0 {
					time.Sleep(hold)
				}
				mu.Lock()
				inside--
				mu.Unlock()
				if err := m.Unlock(ctx); err != nil {
					return fmt.Errorf("lock %d, turn %d: Unlock: %w", i, r, err)
				}
			}
			return nil
		})
	}
	err = g.Wait()
	return most, total, err
}

// HandedOnWithin unlocks holder and checks that the waiter, whose Lock's
// result got carries, holds the lock within d; then it unlocks the
// waiter. It logs how long the hand-over took, with what it went through
// ("behind 5 stale entries").
func HandedOnWithin(t *testing.T, ctx context.Context, holder, waiter Locker, got <-chan error, d time.Duration, what string) {
	t.Helper()
	start := time.Now()
	if err := holder.Unlock(ctx); err != nil {
		t.Fatalf("the holder's Unlock = %v", err)
	}
	if err := <-got; err != nil {
		t.Fatalf("the waiter's Lock = %v", err)
	}
	took := time.Since(start)
	t.Logf("the waiter got the lock %v after the release, %s (bound %v)", took, what, d)
	if took > d {
		t.Errorf("the waiter got the lock %v after the release, %s; want well under %v", took, what, d)
	}
	if err := waiter.Unlock(ctx); err != nil {
		t.Fatalf("the waiter's Unlock = %v", err)
	}
}

// Warm runs one Lock and one Unlock of l, failing t if either fails. A
// Redis lock's first use loads its scripts and runs its server check; a
// test that then loses or holds "the next EVALSHA" (or SET) hits the
// command it means, and a held script lands as a script the server knows.
// It must run in the test's goroutine.
func Warm(t testing.TB, ctx context.Context, l Locker) {
	t.Helper()
	if err := l.Lock(ctx); err != nil {
		t.Fatalf("warm-up Lock = %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("warm-up Unlock = %v", err)
	}
}

// Signal returns a hook, for a lock's WithHook, that sends on reached
// each time it is called at point; reached holds up to 64 signals, and a
// 65th unread one blocks the lock at its hook point.
func Signal(point string) (hook func(ctx context.Context, point string), reached <-chan struct{}) {
	ch := make(chan struct{}, 64)
	return func(_ context.Context, p string) {
		if p == point {
			ch <- struct{}{}
		}
	}, ch
}

// LockQueued starts l.Lock(ctx) in a goroutine and waits until queued,
// a signal from l's hook point for joining the wait queue (see [Signal]),
// fires; it fails t if the Lock returns without having queued, or if 10s
// pass. It returns the channel that will carry the Lock's result. It must
// run in the test's goroutine.
func LockQueued(t testing.TB, ctx context.Context, l Locker, queued <-chan struct{}) <-chan error {
	t.Helper()
	got := make(chan error, 1)
	go func() { got <- l.Lock(ctx) }()
	select {
	case <-queued:
	case err := <-got:
		select {
		case <-queued: // it queued, then was served before this select ran
			got <- err
		default:
			t.Fatalf("the waiter's Lock returned %v before it queued", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter did not queue within 10s")
	}
	return got
}

// GiveUp calls l.Lock with a context that ends d after ctx's start, for
// a lock someone else holds, and fails t unless the call returns an error
// wrapping errNotObtained. It returns how long the call took, the bound
// of the gave-up event's Wait (see [observetest.CheckGaveUp]).
func GiveUp(t testing.TB, ctx context.Context, l Locker, d time.Duration, errNotObtained error) time.Duration {
	t.Helper()
	short, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	began := time.Now()
	if err := l.Lock(short); !errors.Is(err, errNotObtained) {
		t.Fatalf("Lock with a %v deadline while another holds = %v; want ErrNotObtained", d, err)
	}
	return time.Since(began)
}

// SurvivesFailover: a holds the lock when fail kills the system's leader;
// afterwards a is still the holder (b is refused), a's Unlock works, and
// then b gets the lock. Each step after the failure may take up to within.
func SurvivesFailover(t *testing.T, a, b Locker, within time.Duration, fail func(ctx context.Context)) {
	ctx := context.Background()
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	fail(ctx)
	tctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	if ok, err := b.TryLock(tctx); ok || err != nil {
		t.Errorf("b.TryLock after the leader died = %v, %v; want false, nil", ok, err)
	}
	if err := a.Unlock(tctx); err != nil {
		t.Errorf("a.Unlock after the leader died = %v; want nil", err)
	}
	if ok, err := b.TryLock(tctx); !ok || err != nil {
		t.Errorf("b.TryLock after a released = %v, %v; want true, nil", ok, err)
	}
	_ = b.Unlock(ctx)
}

// Eventually polls cond every 10ms for up to d, and fails t if it never
// holds.
func Eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not true after %v: %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Context returns a context that ends with the test, or after a generous
// 30s cap, so that a hung Lock fails the test instead of the whole run.
func Context(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
