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
//
// Each fault of a's Lock is met by a's TryLock too, on a free lock and on
// a lock b holds; each fault of a's Unlock also by a worker that ignores
// Unlock's error and carries on (see [Phase]).

// Phase is the moment of a lock's life that a [Fault] hits.
type Phase int

const (
	// DuringLock: the fault is injected just before a's Lock is called.
	// [UserWorld] also runs it on a's TryLock, once on a free lock (a's
	// TryLock must say true, or fail, never say false of a lock nobody
	// holds; after a failure a's Lock again must get it) and once while b
	// holds the lock (a's TryLock must not get it, and, b gone, the next
	// party must: nothing a's TryLock claimed is left in its way).
	DuringLock Phase = iota
	// DuringWait: the fault is injected while a waits in line behind b
	// (once a's claim is in line, at the Kind's HookClaimed; for a kind
	// without one, once the Kind's Waiting sees a's Lock refused and
	// waiting).
	DuringWait
	// DuringUnlock: the fault is injected just before a's Unlock.
	// [UserWorld] runs it twice: with a worker that calls Unlock again
	// after an error, and with one that ignores the error and carries on
	// (as a deferred Unlock does): then b must still get the lock within
	// the kind's [Kind.Detach] (the lease, or the time the kind takes to
	// withdraw a claim on its own), never when a's session ends.
	DuringUnlock
	// DuringHold: the fault is injected while a holds and does nothing;
	// then b asks for the lock.
	DuringHold
	// DuringTryLock: the fault is injected just before a's TryLock, made
	// while b holds the lock: a fault of a TryLock refused (the withdraw
	// of the claim it made). Checked as DuringLock's faults are on a
	// TryLock of a lock b holds.
	DuringTryLock
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
	case DuringTryLock:
		return "during a refused TryLock"
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
	// NotOnTryLock keeps a DuringLock fault to Lock: [UserWorld] runs
	// every other on TryLock too. For a fault whose TryLock runs tell
	// nothing that its Lock run does not, and cost the suite: say why
	// where it is set.
	NotOnTryLock bool
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
// key from key, judged on the effect (see the comment above [Phase]): a
// fault of Lock on TryLock too ("<fault>, TryLock", "<fault>, TryLock
// taken"), a fault of Unlock with a worker that ignores its error too
// ("<fault>, error ignored"); then an Unlock whose ctx had ended, its
// error ignored; then the races among a lock's methods ([Races]).
func UserWorld[C any](t *testing.T, k Kind[C], w World[C], key func(t testing.TB) string) {
	if k.HookClaimed == "" && k.Waiting == nil {
		t.Fatalf("locktest: kind %s has neither HookClaimed nor Waiting: the suite cannot tell when its Lock waits", k.Name)
	}
	for _, f := range w.Faults {
		t.Run(f.Name, func(t *testing.T) {
			leakcheck.Guard(t)
			runFault(t, k, w, f, key(t), asIs)
		})
		var also []variant
		switch f.During {
		case DuringLock:
			if !f.NotOnTryLock {
				also = []variant{tryFree, tryTaken}
			}
		case DuringUnlock:
			also = []variant{unlockIgnored}
		}
		for _, v := range also {
			t.Run(f.Name+", "+v.String(), func(t *testing.T) {
				leakcheck.Guard(t)
				runFault(t, k, w, f, key(t), v)
			})
		}
	}
	t.Run("Unlock with its ctx ended, error ignored", func(t *testing.T) {
		leakcheck.Guard(t)
		unlockCtxEnded(t, k, w, key(t))
	})
	t.Run("Races", func(t *testing.T) {
		leakcheck.Guard(t)
		Races(t, k, key(t))
	})
}

// A variant is how a worker meets a fault: with the call the fault's
// Phase names, or, for DuringLock's faults, with TryLock instead of Lock,
// and, for DuringUnlock's, ignoring Unlock's error.
type variant int

const (
	asIs          variant = iota
	tryFree               // a's TryLock, on a free lock, meets a Lock's fault
	tryTaken              // a's TryLock, while b holds the lock, meets a Lock's fault
	unlockIgnored         // a's Unlock meets the fault, and a ignores its error
)

func (v variant) String() string {
	switch v {
	case tryFree:
		return "TryLock"
	case tryTaken:
		return "TryLock taken"
	case unlockIgnored:
		return "error ignored"
	}
	return "as is"
}

// detach is how long the lock may stay taken after a's Unlock failed and a
// did nothing more: the kind's Detach, or Recover.
func (j *judge[C]) detach() time.Duration {
	if j.k.Detach > 0 {
		return j.k.Detach
	}
	return j.w.Recover
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

// tried is the outcome of one TryLock: as locked, and whether it said it
// got the lock.
type tried struct {
	locked
	ok bool
}

// tryNow runs l.TryLock, giving up after d, as lockNow runs Lock.
func tryNow(ctx context.Context, l Fenced, d time.Duration) tried {
	cctx, cancel := context.WithCancel(ctx)
	giveUp := time.AfterFunc(d, cancel)
	ok, err := l.TryLock(cctx)
	r := tried{locked: locked{err: err, doneClosed: ok && err == nil && over(l)}, ok: ok}
	if !giveUp.Stop() || !ok || err != nil {
		cancel()
	} else {
		context.AfterFunc(ctx, cancel)
	}
	return r
}

// gotTry checks the outcome of a's TryLock on a free lock under the
// fault: true with a hold it can vouch for, or an error (logged) that the
// fault explains; never false with no error, which says another holds
// the lock, when nobody does (its own claim, sent again, found in its
// way?), unless the fault may end a's session.
func (j *judge[C]) gotTry(r tried, what string) bool {
	t := j.t
	t.Helper()
	switch {
	case r.ok && r.err != nil:
		t.Errorf("%s: a's TryLock = true, %v: an error with the lock held", what, r.err)
		return false
	case r.ok:
		return j.gotLock(r.locked, what, false)
	case r.err != nil:
		t.Logf("%s: a's TryLock = false, %v", what, r.err)
	case j.f.Ends:
		t.Logf("%s: a's TryLock = false, nil on a free lock, under a fault that may end its session", what)
	default:
		t.Errorf("%s: a's TryLock = false, nil on a free lock: it says another holds the lock, and nobody does (its own claim, sent again, in its way?)%s", what, j.lineNow())
	}
	return false
}

// refusedTry checks a's TryLock while b holds the lock, under the fault:
// never true; an error is surfaced (logged). Then a's TryLock again, the
// fault healed, must say false, nil: b still holds. It reports whether
// b's hold outlived the checks (a slow give-up can outlast b's lease:
// then nothing is checked of a's TryLocks but that they do not fail).
func (j *judge[C]) refusedTry(ctx context.Context, r tried, what string) bool {
	t := j.t
	t.Helper()
	if over(j.b) {
		t.Logf("%s: a's TryLock = %v, %v, returned after b's lease ran out: nothing to check", what, r.ok, r.err)
		if r.ok {
			_ = j.a.Unlock(ctx)
		}
		return false
	}
	switch {
	case r.ok:
		t.Errorf("%s: a's TryLock = true, %v while b held the lock: two holders", what, r.err)
		_ = j.a.Unlock(ctx)
	case r.err != nil:
		t.Logf("%s: a's TryLock = false, %v", what, r.err)
	}
	again := tryNow(ctx, j.a, j.w.Call)
	if again.ok || again.err != nil {
		t.Errorf("%s: a's TryLock again, the fault healed, while b holds = %v, %v; want false, nil", what, again.ok, again.err)
		if again.ok {
			_ = j.a.Unlock(ctx)
		}
	}
	return true
}

func runFault[C any](t *testing.T, k Kind[C], w World[C], f Fault[C], key string, v variant) {
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
	if v != asIs {
		what += " (" + v.String() + ")"
	}
	if f.During == DuringTryLock {
		v = tryTaken
	}

	switch {
	case v == tryFree:
		heal := f.Inject(t, faulty)
		r := tryNow(ctx, j.a, w.Call)
		heal()
		holds := j.gotTry(r, what)
		if !holds && (r.err != nil || f.Ends) {
			// A plain worker locks once its TryLock failed.
			holds = j.gotLock(lockNow(ctx, j.a, w.Recover), what+", then Lock", true)
		}
		if holds {
			j.refused(ctx, what)
			j.release(ctx, what)
		}

	case v == tryTaken:
		if r := lockNow(ctx, j.b, w.Call); r.err != nil {
			t.Fatalf("b's Lock = %v", r.err)
		}
		heal := f.Inject(t, faulty)
		r := tryNow(ctx, j.a, w.Call)
		heal()
		held := j.refusedTry(ctx, r, what)
		if err := j.b.Unlock(ctx); err != nil && (held || !errors.Is(err, k.ErrNotHeld)) {
			t.Fatalf("%s: b's Unlock = %v", what, err)
		}

	case v == unlockIgnored:
		err := j.unlockUnderFault(ctx, t, func() func() { return f.Inject(t, faulty) }, w.Call)
		j.afterIgnored(ctx, err, what)

	case f.During == DuringLock:
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

	case f.During == DuringWait:
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

	case f.During == DuringUnlock:
		err := j.unlockUnderFault(ctx, t, func() func() { return f.Inject(t, faulty) }, w.Call)
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

	case f.During == DuringHold:
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

// afterIgnored checks what follows a's Unlock, which answered err, when a
// ignores the answer and does nothing more, as a worker whose deferred
// Unlock drops its error does: b gets the lock within the kind's Detach
// (else the lock stays taken until a's session ends), and releases it.
// unlockUnderFault takes the lock for a, then calls a's Unlock, bounded by
// call, while inject's fault is on, and returns what Unlock said.
func (j *judge[C]) unlockUnderFault(ctx context.Context, t *testing.T, inject func() func(), call time.Duration) error {
	if !j.gotLock(lockNow(ctx, j.a, call), "before the fault", true) {
		t.FailNow()
	}
	heal := inject()
	cctx, cancel := context.WithTimeout(ctx, call)
	err := j.a.Unlock(cctx)
	cancel()
	heal()
	return err
}

func (j *judge[C]) afterIgnored(ctx context.Context, err error, what string) {
	t := j.t
	t.Helper()
	if err != nil {
		t.Logf("%s: a's Unlock = %v; a ignores it and carries on", what, err)
	}
	d := j.detach()
	r := lockNow(ctx, j.b, d)
	if r.err != nil {
		t.Errorf("%s: a's Unlock = %v and a did nothing more (a worker that ignores Unlock's error): b's Lock = %v within %v: the lock stays taken (a claim left behind until a's session ends?)%s", what, err, r.err, d, j.lineNow())
		return
	}
	if err := j.b.Unlock(ctx); err != nil {
		t.Errorf("%s: b's Unlock = %v", what, err)
	}
}

// unlockCtxEnded: a holds the lock and calls Unlock with a ctx that has
// already ended (a deferred Unlock on a request's context that is over),
// ignoring its answer: b gets the lock within the kind's Detach.
func unlockCtxEnded[C any](t *testing.T, k Kind[C], w World[C], key string) {
	ctx := t.Context()
	what := "Unlock with its ctx ended"
	j := &judge[C]{t: t, k: k, w: w, f: Fault[C]{Name: what}, key: key, clean: k.Conn(t)}
	j.a = k.New(k.Conn(t), key, Options{})
	j.b = k.New(j.clean, key, Options{})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = j.b.Unlock(ctx)
		_ = j.a.Unlock(ctx)
	})
	if !j.gotLock(lockNow(ctx, j.a, w.Call), "before Unlock", true) {
		t.FailNow()
	}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	j.afterIgnored(ctx, j.a.Unlock(ended), what)
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
// then holds); then TryLock's races (see raceTryLock). Nothing panics,
// and the lock ends free.
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
	raceTryLock(t, k, c, m, key)
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

// raceTryLock runs TryLock at the same moment as the other methods, in
// rounds: a TryLock of the held Mutex m beside its Unlock (the Unlock
// says nil; the TryLock says true, then holds, or false; no error); two
// parties' TryLocks on a free lock (at most one true); a party's TryLock
// beside m's Lock (while the TryLock's hold lasts, the Lock waits; then
// it holds). Each round ends with the lock free.
func raceTryLock[C any](t *testing.T, k Kind[C], c C, m Fenced, key string) {
	ctx := Context(t)
	other := k.New(k.Conn(t), key, Options{})
	unlockIf := func(l Fenced, ok bool, what string) {
		t.Helper()
		if !ok {
			return
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatalf("%s: Unlock after TryLock said true = %v", what, err)
		}
	}
	for round := range 5 {
		what := fmt.Sprintf("round %d, TryLock beside Unlock", round)
		if err := m.Lock(ctx); err != nil {
			t.Fatalf("%s: Lock = %v", what, err)
		}
		var (
			wg   sync.WaitGroup
			ok   bool
			terr error
			uerr error
		)
		start := make(chan struct{})
		wg.Go(func() { <-start; ok, terr = m.TryLock(ctx) })
		wg.Go(func() { <-start; uerr = m.Unlock(ctx) })
		close(start)
		wg.Wait()
		if uerr != nil {
			t.Errorf("%s: Unlock = %v; want nil", what, uerr)
		}
		if terr != nil {
			t.Errorf("%s: TryLock = %v, %v; want no error", what, ok, terr)
		}
		unlockIf(m, ok, what)

		what = fmt.Sprintf("round %d, two parties' TryLocks", round)
		var oks [2]bool
		var errs [2]error
		start = make(chan struct{})
		for i, l := range []Fenced{m, other} {
			wg.Go(func() { <-start; oks[i], errs[i] = l.TryLock(ctx) })
		}
		close(start)
		wg.Wait()
		if oks[0] && oks[1] {
			t.Errorf("%s: both said true: two holders", what)
		}
		for i, err := range errs {
			if err != nil {
				t.Errorf("%s: TryLock %d = %v, %v; want no error", what, i, oks[i], err)
			}
		}
		unlockIf(m, oks[0], what)
		unlockIf(other, oks[1], what)

		what = fmt.Sprintf("round %d, TryLock beside another's Lock", round)
		locked := make(chan error, 1)
		start = make(chan struct{})
		wg.Go(func() { <-start; ok, terr = other.TryLock(ctx) })
		go func() { <-start; locked <- m.Lock(ctx) }()
		close(start)
		wg.Wait()
		if terr != nil {
			t.Errorf("%s: TryLock = %v, %v; want no error", what, ok, terr)
		}
		if ok {
			select {
			case err := <-locked:
				if err == nil {
					t.Errorf("%s: TryLock said true and the other's Lock returned nil before it was unlocked: two holders", what)
					_ = m.Unlock(ctx)
				}
				locked <- err
			default:
			}
			unlockIf(other, ok, what)
		}
		if err := <-locked; err != nil {
			t.Fatalf("%s: Lock = %v", what, err)
		}
		if err := m.Unlock(ctx); err != nil && !(ok && errors.Is(err, k.ErrNotHeld)) {
			t.Fatalf("%s: Unlock after Lock = %v", what, err)
		}
	}
}
