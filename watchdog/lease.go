package watchdog

// Goroutines.
//
// Each hold runs one refresher goroutine, from the acquire until the hold
// ends; Unlock and [Lease.Stop] wait for it to exit. After loss it exits as
// soon as any in-flight renewal returns, which the deadline bounds; after
// its Lock context ends it exits once the release returns. Two timers
// (time.AfterFunc) watch the deadline and the cap; they run only for an
// instant when they fire.
//
// Reuse.
//
// The renewal engine works for any lock with an owner-checked extend:
// [Keep] takes an [Extender] and returns a [Lease] with the same schedule
// and signals. A reentrant.Mutex is such an Extender; see the Keep example.
// So is correct's Mutex, which with a Notifier also waits without polling
// (its waiters queue, and Unlock hands the lock to the oldest), where this
// package's Mutex retries with backoff: correct with a Notifier, kept by
// Keep, is a renewed lock that is fair under contention (see the Keep
// hand-off example). As correct's Mutex reports
// its validity (Until), Keep starts its lease from there, with no round
// trip of its own.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/locklab/locklab/internal/frame"
)

// Extender is a lock that can renew its own lease. Extend sets the lock to
// expire ttl from now if, and only if, the caller still holds it. It must
// honour ctx's deadline: the lease gives each renewal until the moment the
// lease runs out. An error that means "the lock is no longer ours" must be
// told apart from a transport error through [WithNotHeld].
//
// A reentrant.Mutex is an Extender; so is any lock with an owner-checked
// extend.
type Extender interface {
	Extend(ctx context.Context, ttl time.Duration) error
}

// Lease keeps a lock alive by renewing it in the background, and tells its
// holder when it stops doing so. It comes from [Keep]; a [Mutex] runs one
// per hold. Its methods are safe for concurrent use.
//
// A Lease runs one goroutine, the refresher. It starts with the lease and
// exits when the lease ends: on [Lease.Stop] (which waits for it), when a
// renewal is refused, when the lease runs out while renewals fail, when the
// holder's context ends, or at the [WithMaxHold] cap. A [Mutex]'s refresher
// releases the lock before it exits in the last two cases, bounded by
// retry.ReleaseTimeout (2s). Timers (time.AfterFunc) watch the deadline and the cap while the
// refresher is busy or parked; they run only for an instant.
type Lease struct {
	ext      Extender
	ttl      time.Duration
	interval time.Duration
	retry    time.Duration // wait before retrying a renewal that failed
	margin   time.Duration // kept back from ttl for clock-rate drift
	f        frame.Frame   // the hook; a Lease reports to no observer
	notHeld  func(err error) bool
	release  func(ctx context.Context) // nil for Keep; see finish
	lost     func(cause error)         // called once when the lock is declared lost; may be nil

	ctx    context.Context // the holder's context; cancelled when the lease ends
	cancel context.CancelCauseFunc
	exited chan struct{} // closed when the refresher returns

	mu       sync.Mutex  // protects the fields below
	ended    endReason   // why the lease ended; live while it runs
	deadline time.Time   // when the lease runs out unless renewed
	lastErr  error       // last renewal error since the last success
	expiry   *time.Timer // fires at deadline
	cap      *time.Timer // fires at the WithMaxHold cap; nil without one
}

type endReason int

const (
	live        endReason = iota
	endReleased           // Stop or Unlock
	endLost               // renewal refused, or the lease ran out
	endContext            // the holder's context ended
	endMaxHold            // the WithMaxHold cap was reached
)

// Keep starts renewing a lock that e holds and returns its Lease. It first
// extends the lock once, so the lease is known to be ours and to run from
// now; if that fails, Keep returns the error and starts nothing. Then it
// extends the lock to the ttl set by [WithTTL] every interval ([WithInterval]),
// until [Lease.Stop], loss, or the end of ctx. Extend calls get a context
// derived from ctx, so values in ctx (such as a reentrant owner) reach e.
//
// A lock that also reports its validity, as correct's Mutex does with
// Until, needs no such first Extend: when e has a method Until() time.Time
// and that is more than an interval away, the lease runs until then (or
// for one ttl, if that is sooner) with renewals due from there, and Keep
// costs no round trip. A zero or nearer Until takes the Extend path.
//
// Keep never releases the lock: when ctx ends or the [WithMaxHold] cap is
// reached, renewal stops and the lock expires within ttl unless the caller
// unlocks it. Call [Lease.Stop] before unlocking, so that no renewal runs
// after the release.
//
// WithRetry and WithTries, which tune [Mutex.Lock], do not apply to Keep.
func Keep(ctx context.Context, e Extender, opts ...Option) (*Lease, error) {
	o, err := newOptions(opts)
	if err == nil && e == nil {
		err = invalid("Keep: nil Extender")
	}
	if err != nil {
		return nil, err
	}
	if u, ok := e.(interface{ Until() time.Time }); ok {
		if until := u.Until(); time.Until(until) > o.interval {
			return startLeaseUntil(ctx, e, o, until), nil
		}
	}
	start := time.Now()
	if err := e.Extend(ctx, o.ttl); err != nil {
		if o.notHeld(err) && !errors.Is(err, ErrNotHeld) {
			return nil, fmt.Errorf("watchdog: keep: %w: %w", ErrNotHeld, err)
		}
		return nil, fmt.Errorf("watchdog: keep: %w", err)
	}
	return startLease(ctx, e, o, start, nil, nil), nil
}

// startLeaseUntil starts the refresher for a lease valid until until, as
// the lock itself reports: it is treated as confirmed at until − ttl, so
// the deadline is until − margin, the same drift allowance every later
// deadline keeps back (the lock's Until counts with Redis's TTL, not with
// clocks that drift), or now + ttl − margin if that is sooner (a lock with
// a longer TTL than the lease's).
func startLeaseUntil(ctx context.Context, e Extender, o options, until time.Time) *Lease {
	start := until.Add(-o.ttl)
	if now := time.Now(); now.Before(start) {
		start = now
	}
	return startLease(ctx, e, o, start, nil, nil)
}

// startLease starts the refresher for a lease last confirmed at start.
// release, if not nil, is how the refresher releases the lock when the
// holder's context ends or the cap is reached (see finish); lost, if not
// nil, is called with the cause when the lease ends because the lock was
// lost.
func startLease(ctx context.Context, e Extender, o options, start time.Time, release func(context.Context), lost func(error)) *Lease {
	l := &Lease{
		ext:      e,
		ttl:      o.ttl,
		interval: o.interval,
		retry:    max(o.interval/retryDivisor, time.Millisecond),
		margin:   margin(o.ttl),
		f:        frame.Frame{Hook: o.hook},
		notHeld:  o.notHeld,
		release:  release,
		lost:     lost,
		exited:   make(chan struct{}),
	}
	l.ctx, l.cancel = context.WithCancelCause(ctx)
	l.mu.Lock()
	l.deadline = start.Add(l.ttl - l.margin)
	l.expiry = time.AfterFunc(time.Until(l.deadline), l.expire)
	if o.maxHold > 0 {
		l.cap = time.AfterFunc(time.Until(start.Add(o.maxHold)), func() {
			l.end(endMaxHold, fmt.Errorf("watchdog: held for %v: %w", o.maxHold, ErrMaxHold))
		})
	}
	l.mu.Unlock()
	go l.run(start)
	return l
}

// Context returns the holder's context: derived from the ctx given to
// Lock or Keep, and cancelled when the lease ends. context.Cause tells why:
// [ErrReleased] after Stop or Unlock, an error wrapping [ErrNotHeld] when
// the lock was lost (joined with the last transport error when renewals
// kept failing until the lease ran out), [ErrMaxHold] at the cap, or the
// cause of the ctx given to Lock or Keep when that ended. Work protected by
// the lock should run under this context.
func (l *Lease) Context() context.Context { return l.ctx }

// Done returns a channel that is closed when the lease ends, for any of the
// reasons listed under [Lease.Context].
func (l *Lease) Done() <-chan struct{} { return l.ctx.Done() }

// Stop ends the lease: it stops renewing, cancels [Lease.Context] with cause
// [ErrReleased], and waits for the refresher to exit, so that no renewal
// runs after Stop returns. It does not release the lock. Stop returns nil
// when it ended a live lease, or the cause the lease had already ended with
// (an error wrapping [ErrNotHeld] if the lock was lost). It is safe to call
// more than once.
func (l *Lease) Stop() error {
	ended := l.end(endReleased, ErrReleased)
	<-l.exited
	if ended {
		return nil
	}
	l.mu.Lock()
	r := l.ended
	l.mu.Unlock()
	if r == endReleased {
		return ErrReleased
	}
	return context.Cause(l.ctx)
}

// end ends a live lease for reason r, cancelling the holder's context with
// cause. It reports whether this call ended it.
func (l *Lease) end(r endReason, cause error) bool {
	l.mu.Lock()
	if l.ended == live && l.ctx.Err() != nil {
		// Only end cancels l.ctx, after setting ended: the parent
		// context ended first.
		l.ended = endContext
	}
	if l.ended != live {
		l.mu.Unlock()
		return false
	}
	l.ended = r
	l.mu.Unlock()
	l.cancel(cause)
	if r == endLost {
		if l.lost != nil {
			l.lost(cause)
		}
		l.f.At(l.ctx, HookLost)
	}
	return true
}

// expire runs on the expiry timer. A renewal may have moved the deadline
// since the timer was set; then it is a stale firing and does nothing (the
// renewal has re-armed the timer).
func (l *Lease) expire() {
	l.mu.Lock()
	if l.ended != live || time.Now().Before(l.deadline) {
		l.mu.Unlock()
		return
	}
	lastErr := l.lastErr
	l.mu.Unlock()
	cause := fmt.Errorf("watchdog: no renewal succeeded within the lease of %v: %w", l.ttl, ErrNotHeld)
	if lastErr != nil {
		cause = fmt.Errorf("watchdog: lease of %v ran out while renewals failed: %w; last error: %w", l.ttl, ErrNotHeld, lastErr)
	}
	l.end(endLost, cause)
}

// run is the refresher. Renewal k is due at the start of the last renewal
// that succeeded plus the interval, an absolute time: a late timer or a
// slow reply delays one renewal, never the ones after it.
func (l *Lease) run(last time.Time) {
	defer close(l.exited)
	timer := time.NewTimer(time.Until(last.Add(l.interval)))
	defer timer.Stop()
	for {
		select {
		case <-l.ctx.Done():
			l.finish()
			return
		case <-timer.C:
		}
		if next, ok := l.renew(); ok {
			timer.Reset(time.Until(next))
		}
	}
}

// renew makes one renewal and returns when the next is due. It reports
// false when the lease ended.
func (l *Lease) renew() (next time.Time, ok bool) {
	l.f.At(l.ctx, HookBeforeRenew)
	l.mu.Lock()
	deadline := l.deadline
	l.mu.Unlock()
	if l.ctx.Err() != nil {
		return time.Time{}, false // ended while the hook ran
	}
	start := time.Now()
	// A renewal still in flight when the lease runs out is too late: the
	// deadline cancels it, and the expiry timer declares the lock lost.
	ctx, cancel := context.WithDeadline(l.ctx, deadline)
	err := l.ext.Extend(ctx, l.ttl)
	cancel()
	if l.ctx.Err() != nil {
		return time.Time{}, false
	}
	switch {
	case err == nil:
		l.mu.Lock()
		if l.ended != live || !time.Now().Before(l.deadline) {
			// The reply came after the deadline (an Extender that ignored
			// ctx): the holder may already have been told the lock is safe
			// when it was not. The expiry timer ends the lease.
			l.mu.Unlock()
			return time.Time{}, false
		}
		// The server ran the renewal at or after start, so the key lives
		// at least until start+ttl.
		l.deadline = start.Add(l.ttl - l.margin)
		l.lastErr = nil
		l.expiry.Reset(time.Until(l.deadline))
		l.mu.Unlock()
		l.f.At(l.ctx, HookRenewed)
		return start.Add(l.interval), true
	case l.notHeld(err):
		cause := fmt.Errorf("watchdog: renewal refused: %w", err)
		if !errors.Is(err, ErrNotHeld) {
			cause = fmt.Errorf("watchdog: renewal refused: %w: %w", ErrNotHeld, err)
		}
		l.end(endLost, cause)
		return time.Time{}, false
	default:
		// An error caused by our own deadline (go-redis reports it as a
		// socket timeout) says less than the one before it; keep that.
		ownDeadline := !time.Now().Before(deadline)
		l.mu.Lock()
		if l.lastErr == nil || !ownDeadline {
			l.lastErr = err
		}
		l.mu.Unlock()
		l.f.At(l.ctx, HookRenewFailed)
		return time.Now().Add(l.retry), true
	}
}

// finish runs in the refresher once the holder's context is done. If the
// holder's own context ended it, or the cap did, a Mutex's lock is
// released here, so that it does not keep others out for a whole ttl.
func (l *Lease) finish() {
	l.mu.Lock()
	if l.ended == live {
		l.ended = endContext // nobody called end: the parent context ended
	}
	r := l.ended
	l.expiry.Stop()
	if l.cap != nil {
		l.cap.Stop()
	}
	l.mu.Unlock()
	if l.release != nil && (r == endContext || r == endMaxHold) {
		l.release(l.ctx)
	}
}
