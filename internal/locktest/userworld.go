package locktest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/locklab/locklab/internal/leakcheck"
)

// The user-world fault suite. The scenarios in locktest.go run on a clean
// network with clients that never retry; users run their locks on each
// system's client with its default options (its own retries on), through
// networks that lose replies and deliver requests late, with sessions and
// leases that end mid-call, servers that crash, and, for PostgreSQL,
// poolers and isolation levels. Each lock package makes those faults on
// its own system, because only it knows its protocol, and hands them to
// [UserWorld] as [Fault] values; UserWorld judges what follows the same way
// for every package, on the effect: how many hold the lock, whether
// another client can get it within a bound (no permanent stall), whether a
// Lock returned a hold whose Done had already closed, whether Unlock's
// answer is true, and whether a claim is left in line.

// Phase is the moment of a lock's life that a [Fault] hits.
type Phase int

const (
	// DuringLock: the fault is injected just before a's Lock is called.
	DuringLock Phase = iota
	// DuringWait: the fault is injected while a waits in line behind b
	// (once a's claim is in line, at the Kind's HookClaimed; for a kind
	// without one, once the Kind's Waiting sees a's Lock refused and
	// waiting).
	DuringWait
	// DuringUnlock: the fault is injected just before a's Unlock.
	DuringUnlock
	// DuringHold: the fault is injected while a holds and does nothing;
	// then b asks for the lock.
	DuringHold
)

func (p Phase) String() string {
	switch p {
	case DuringLock:
		return "during Lock"
	case DuringWait:
		return "while waiting"
	case DuringUnlock:
		return "during Unlock"
	case DuringHold:
		return "while holding"
	}
	return fmt.Sprintf("Phase(%d)", int(p))
}

// A Fault is one fault of the user's world, made by a lock package's test
// on its own system: a reply lost and the request sent again by the
// client's own retries, a request held in the network past the client's
// give-up and delivered late, a session or lease that ends mid-call, a
// connection that blips, a server killed and restarted with its data.
type Fault[C any] struct {
	// Name names the fault in the subtest's name and in messages: "claim
	// reply lost", "session expired mid-Lock".
	Name string
	// During is when the fault hits.
	During Phase
	// Inject starts the fault on conn, a's connection (from
	// [World.Faulty]), and returns heal. For DuringLock and DuringUnlock,
	// Inject arms the fault and returns at once, and a's call meets it;
	// for DuringWait it returns once the fault has had its effect (for a
	// session expiry: the server ended the session), while a waits; for
	// DuringHold it starts the fault, and b's Lock follows at once.
	// [UserWorld] calls heal once a's call has returned (DuringWait: right
	// after Inject; DuringHold: once b's Lock has returned or given up):
	// heal ends the fault, delivers what was held, and returns once the
	// system serves conn again (on a new session, if the fault ended the
	// old one). Inject and heal run in the test's goroutine and may fail t.
	Inject func(t *testing.T, conn C) (heal func())
	// Ends says the fault may end a's session or lease: then a's Lock may
	// fail, a's Unlock may return ErrNotHeld, and b may get the lock while
	// a had it (DuringHold), provided a's Done closed first. A fault that
	// does not end it allows none of these.
	Ends bool
}

// World is what [UserWorld] needs of a lock package besides its [Kind].
type World[C any] struct {
	// Faulty returns a new connection to the package's shared test server
	// on the path its Faults act on (its fault proxy), on the client's
	// default options, closed when the test ends.
	Faulty func(t *testing.T) C
	// Faults are the package's faults.
	Faults []Fault[C]
	// Call bounds a's call under a fault (the ctx deadline of a's Lock
	// and Unlock).
	Call time.Duration
	// Recover bounds how long, once a fault is healed, another client may
	// wait for the lock a does not hold: the session timeout or the lease
	// TTL, with a margin. Waiting longer is a stall.
	Recover time.Duration
}

// UserWorld runs, as subtests, every fault of w against k, each on a fresh
// key from key, judged on the effect (see the comment above [Phase]), then
// the races among a lock's methods ([Races]).
func UserWorld[C any](t *testing.T, k Kind[C], w World[C], key func(t testing.TB) string) {
	if k.HookClaimed == "" && k.Waiting == nil {
		t.Fatalf("locktest: kind %s has neither HookClaimed nor Waiting: the suite cannot tell when its Lock waits", k.Name)
	}
	for _, f := range w.Faults {
		t.Run(f.Name, func(t *testing.T) {
			leakcheck.Guard(t)
			runFault(t, k, w, f, key(t))
		})
	}
	t.Run("Races", func(t *testing.T) {
		leakcheck.Guard(t)
		Races(t, k, key(t))
	})
}

// doner is a lock with a lost-lease signal.
type doner interface {
	Done() <-chan struct{}
}

// closedNow reports whether l's Done (for a kind that has one) is closed.
func closedNow(l Fenced) bool {
	d, ok := l.(doner)
	if !ok {
		return false
	}
	select {
	case <-d.Done():
		return true
	default:
		return false
	}
}

// untiler is a lock that says until when its lease lasts.
type untiler interface {
	Until() time.Time
}

// over reports whether l's hold is already over as l itself tells it: its
// Done (for a kind that has one) is closed, or its Until (for a kind that
// has one) has passed.
func over(l Fenced) bool {
	if closedNow(l) {
		return true
	}
	u, ok := l.(untiler)
	return ok && !time.Now().Before(u.Until())
}

// locked is the outcome of one Lock: its error, and whether the hold was
// already over (see over) when Lock returned.
type locked struct {
	err        error
	doneClosed bool
}

// lockNow runs l.Lock, giving up after d, and reports, at the moment it
// returns, whether the hold is already over. The context of a Lock that
// succeeded is not cancelled when lockNow returns but when ctx ends (the
// test's): some locks keep their hold for as long as the context they were
// locked with (watchdog's refresher), as a caller's would.
func lockNow(ctx context.Context, l Fenced, d time.Duration) locked {
	cctx, cancel := context.WithCancel(ctx)
	giveUp := time.AfterFunc(d, cancel)
	err := l.Lock(cctx)
	r := locked{err: err, doneClosed: err == nil && over(l)}
	if !giveUp.Stop() || err != nil {
		cancel()
	} else {
		context.AfterFunc(ctx, cancel)
	}
	return r
}

// judge is one fault's run: the lock under test (a, on the faulty
// connection), the lock of another client (b, on a clean one), and what
// the checks below need to know.
type judge[C any] struct {
	t     *testing.T
	k     Kind[C]
	w     World[C]
	f     Fault[C]
	key   string
	clean C
	a, b  Fenced
	fence uint64 // the largest token a held
}

// gotLock checks the outcome of one of a's Locks: an error is allowed
// (and logged) only where the fault explains it, unless must; a nil one
// must come with a Done still open (a Lock never returns a lease that is
// already over) and a token.
func (j *judge[C]) gotLock(r locked, what string, must bool) bool {
	t := j.t
	t.Helper()
	if r.err != nil {
		if must {
			t.Errorf("%s: a's Lock = %v; want nil (a plain worker that retries Lock after an error must get the lock once the fault is over)", what, r.err)
		} else {
			t.Logf("%s: a's Lock = %v", what, r.err)
		}
		return false
	}
	if r.doneClosed {
		t.Errorf("%s: a's Lock returned nil with its lease already over (Done closed or Until passed): a lock must never hand out a hold it cannot vouch for", what)
	}
	f := j.a.Fence()
	if f == 0 && !j.k.Fenceless {
		t.Errorf("%s: a's Lock returned nil, but a.Fence() = 0", what)
	}
	j.fence = max(j.fence, f)
	return true
}

// release unlocks a, which holds (as far as it knows): the answer must be
// nil, unless the fault may have ended a's session and a's Done closed,
// where ErrNotHeld is true too. A transport error is allowed under a fault
// during Unlock, and then a second Unlock must settle it.
func (j *judge[C]) release(ctx context.Context, what string) {
	t := j.t
	t.Helper()
	wasClosed := closedNow(j.a)
	cctx, cancel := context.WithTimeout(ctx, j.w.Call)
	err := j.a.Unlock(cctx)
	cancel()
	switch {
	case err == nil:
	case errors.Is(err, j.k.ErrNotHeld) && j.f.Ends && wasClosed:
		t.Logf("%s: a's Unlock = ErrNotHeld: its session ended under the fault, and its Done had closed", what)
	case errors.Is(err, j.k.ErrNotHeld):
		t.Errorf("%s: a's Unlock = %v; want nil: a held the lock until then (its Done was open; the fault %s)", what, err, j.endsWord())
	default:
		t.Errorf("%s: a's Unlock = %v; want nil once the fault is over", what, err)
	}
}

func (j *judge[C]) endsWord() string {
	if j.f.Ends {
		return "may end a session"
	}
	return "ends no session"
}

// refused checks that b cannot get the lock while a holds it.
func (j *judge[C]) refused(ctx context.Context, what string) {
	t := j.t
	t.Helper()
	if over(j.a) && j.f.Ends {
		return // a may have lost it: nothing to check
	}
	cctx, cancel := context.WithTimeout(ctx, j.w.Recover)
	defer cancel()
	ok, err := j.b.TryLock(cctx)
	if err != nil {
		t.Errorf("%s: b's TryLock = %v", what, err)
	}
	if ok {
		t.Errorf("%s: b got the lock while a held it (a's Done open): two holders", what)
		_ = j.b.Unlock(ctx)
	}
}

// free checks that the lock is free once a is done with it: b gets it
// within Recover (else something a left behind stalls every client), with
// a larger token than a's, and releases it; then no claim is left in line.
func (j *judge[C]) free(ctx context.Context, what string) {
	t := j.t
	t.Helper()
	r := lockNow(ctx, j.b, j.w.Recover)
	if r.err != nil {
		t.Errorf("%s: b's Lock = %v within %v: the lock is stuck (a claim left behind, or a hold never released)%s", what, r.err, j.w.Recover, j.lineNow())
		return
	}
	if r.doneClosed {
		t.Errorf("%s: b's Lock returned nil with its lease already over (Done closed or Until passed)", what)
	}
	if fb := j.b.Fence(); j.fence != 0 && fb <= j.fence {
		t.Errorf("%s: b.Fence() = %d after a held %d; want larger", what, fb, j.fence)
	}
	if err := j.b.Unlock(ctx); err != nil {
		t.Errorf("%s: b's Unlock = %v", what, err)
	}
	if j.k.Line != nil {
		deadline := time.Now().Add(j.w.Recover)
		for {
			got := j.k.Line(t, j.clean, j.key)
			if len(got) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("%s: claims left in line %v after every client released: %q", what, j.w.Recover, got)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func (j *judge[C]) lineNow() string {
	if j.k.Line == nil {
		return ""
	}
	return fmt.Sprintf("; claims in line: %q", j.k.Line(j.t, j.clean, j.key))
}

func runFault[C any](t *testing.T, k Kind[C], w World[C], f Fault[C], key string) {
	ctx := t.Context()
	j := &judge[C]{t: t, k: k, w: w, f: f, key: key, clean: k.Conn(t)}
	hook, claimed := Signal(k.HookClaimed)
	faulty := w.Faulty(t)
	j.a = k.New(faulty, key, Options{Hook: hook})
	j.b = k.New(j.clean, key, Options{})
	// A check that stops the test (t.Fatal) may leave a hold behind: end
	// both before their connections close, so that cleanup never waits on
	// a lock nobody will release.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = j.b.Unlock(ctx)
		_ = j.a.Unlock(ctx)
	})
	what := f.Name + " " + f.During.String()

	switch f.During {
	case DuringLock:
		heal := f.Inject(t, faulty)
		r := lockNow(ctx, j.a, w.Call)
		heal()
		holds := j.gotLock(r, what, false)
		if !holds {
			// A plain worker tries again once its Lock failed.
			holds = j.gotLock(lockNow(ctx, j.a, w.Recover), what+", then Lock again", true)
		}
		if holds {
			j.refused(ctx, what)
			j.release(ctx, what)
		}

	case DuringWait:
		if r := lockNow(ctx, j.b, w.Call); r.err != nil {
			t.Fatalf("b's Lock = %v", r.err)
		}
		var seen func(context.Context) error
		if k.HookClaimed == "" {
			seen = k.Waiting(t, faulty, key)
		}
		got := make(chan locked, 1)
		go func() { got <- lockNow(ctx, j.a, w.Call+2*w.Recover) }()
		waitQueued(t, claimed, seen, got)
		heal := f.Inject(t, faulty)
		heal()
		if err := j.b.Unlock(ctx); err != nil {
			t.Fatalf("%s: b's Unlock = %v", what, err)
		}
		holds := j.gotLock(<-got, what, false)
		if !holds {
			holds = j.gotLock(lockNow(ctx, j.a, w.Recover), what+", then Lock again", true)
		}
		if holds {
			j.release(ctx, what)
		}

	case DuringUnlock:
		if !j.gotLock(lockNow(ctx, j.a, w.Call), "before the fault", true) {
			t.FailNow()
		}
		heal := f.Inject(t, faulty)
		cctx, cancel := context.WithTimeout(ctx, w.Call)
		err := j.a.Unlock(cctx)
		cancel()
		heal()
		switch {
		case err == nil:
		case errors.Is(err, k.ErrNotHeld) && f.Ends:
			t.Logf("%s: a's Unlock = ErrNotHeld under a fault that may end its session", what)
		case errors.Is(err, k.ErrNotHeld):
			t.Errorf("%s: a's Unlock = %v; want nil: a held the lock until it called Unlock, and the fault ends no session (a resent release must not turn into ErrNotHeld)", what, err)
		default:
			t.Logf("%s: a's Unlock = %v (outcome unknown); Unlock again", what, err)
			if err := j.a.Unlock(ctx); err != nil && !errors.Is(err, k.ErrNotHeld) {
				t.Errorf("%s: a's second Unlock = %v; want nil or ErrNotHeld", what, err)
			}
		}

	case DuringHold:
		if !j.gotLock(lockNow(ctx, j.a, w.Call), "before the fault", true) {
			t.FailNow()
		}
		heal := f.Inject(t, faulty)
		r := lockNow(ctx, j.b, w.Recover)
		aClosed := over(j.a) // right when b's Lock returned
		heal()
		if r.err == nil {
			switch {
			case !f.Ends:
				t.Errorf("%s: b got the lock while a held it, and the fault ends no session: two holders", what)
			case !aClosed:
				t.Errorf("%s: b got the lock while a's Done was still open (and its Until not passed): a was not told it lost the lock before another client held it", what)
			}
			if fb := j.b.Fence(); !j.k.Fenceless && fb <= j.fence {
				t.Errorf("%s: b.Fence() = %d after a held %d; want larger", what, fb, j.fence)
			}
			if err := j.a.Unlock(ctx); !errors.Is(err, k.ErrNotHeld) {
				t.Errorf("%s: a's Unlock after b took the lock = %v; want ErrNotHeld", what, err)
			}
			if err := j.b.Unlock(ctx); err != nil {
				t.Errorf("%s: b's Unlock = %v", what, err)
			}
		} else {
			t.Logf("%s: b's Lock = %v (a kept the lock)", what, r.err)
			j.release(ctx, what)
		}
	}
	j.free(ctx, what)
}

// waitQueued waits until a's Lock, whose outcome got will carry, waits in
// line: its hook fired at the kind's HookClaimed, or, for a kind without
// one, seen (the Kind's Waiting) returned. It fails t if the Lock returned
// first, or did not wait within 10s.
func waitQueued(t *testing.T, claimed <-chan struct{}, seen func(context.Context) error, got chan locked) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if seen != nil {
		ch := make(chan struct{})
		claimed = ch
		go func() {
			if seen(ctx) == nil {
				close(ch)
			}
		}()
	}
	select {
	case <-claimed:
	case r := <-got:
		t.Fatalf("a's Lock returned %v before it waited in line", r.err)
	case <-ctx.Done():
		t.Fatal("a did not wait in line within 10s")
	}
}

// Races runs a lock's methods at the same moment on one Mutex: two
// Unlocks of one hold (exactly one says nil, the other ErrNotHeld), with
// Fence, Done and (for a kind that has it) PID beside them; then a Lock
// of the held Mutex beside its Unlock (the Lock waits for the Unlock and
// then holds). Nothing panics, and the lock ends free.
func Races[C any](t *testing.T, k Kind[C], key string) {
	ctx := Context(t)
	c := k.Conn(t)
	m := k.New(c, key, Options{})
	for round := range 10 {
		if err := m.Lock(ctx); err != nil {
			t.Fatalf("round %d: Lock = %v", round, err)
		}
		var (
			wg   sync.WaitGroup
			errs [2]error
		)
		start := make(chan struct{})
		for i := range errs {
			wg.Go(func() { <-start; errs[i] = m.Unlock(ctx) })
		}
		wg.Go(func() { <-start; _ = m.Fence() })
		if d, ok := m.(doner); ok {
			wg.Go(func() { <-start; _ = d.Done() })
		}
		if p, ok := m.(interface{ PID() uint32 }); ok {
			wg.Go(func() { <-start; _ = p.PID() })
		}
		close(start)
		wg.Wait()
		nils := 0
		for _, err := range errs {
			switch {
			case err == nil:
				nils++
			case !errors.Is(err, k.ErrNotHeld):
				t.Errorf("round %d: one of two racing Unlocks = %v; want nil or ErrNotHeld", round, err)
			}
		}
		if nils != 1 {
			t.Fatalf("round %d: two racing Unlocks of one hold = %v, %v; want exactly one nil and one ErrNotHeld", round, errs[0], errs[1])
		}
	}
	// A Lock of the held Mutex beside its Unlock.
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	second := make(chan error, 1)
	go func() { second <- m.Lock(ctx) }()
	if err := m.Unlock(ctx); err != nil {
		t.Fatalf("Unlock beside a second Lock = %v", err)
	}
	if err := <-second; err != nil {
		t.Fatalf("the second Lock, after the Unlock beside it = %v", err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatalf("Unlock of the second hold = %v", err)
	}
	last := k.New(c, key, Options{})
	if ok, err := last.TryLock(ctx); !ok || err != nil {
		t.Errorf("TryLock after the races = %v, %v; want true, nil", ok, err)
		return
	}
	if err := last.Unlock(ctx); err != nil {
		t.Errorf("Unlock after the races = %v", err)
	}
	if k.Line != nil {
		if got := k.Line(t, c, key); len(got) != 0 {
			t.Errorf("claims left after the races: %q", got)
		}
	}
}
