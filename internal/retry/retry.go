// Package retry is the one way locklab's lock packages repeat an attempt to
// take a lock, and bound the commands that must run even after the caller
// gave up. Each package's exported options (WithRetry, WithTries) feed a
// [Policy]; its Lock is [Do] over its own one-attempt function. A command
// sent again while the servers are too busy to answer (a release, a round
// of a waiter in the queues) is [Repeat] or Do with a [Doubling] delay: no
// lock package writes a retry loop of its own (loops_test.go checks).
//
// The rules every package gets from here, so that one reads like another:
//
//   - A nil DelayFunc is the default, [Backoff]. Zero tries is no limit:
//     only the context ends the wait.
//   - Each attempt is a fresh try with a fresh token. A command of an
//     earlier attempt can still be on the wire (its reply lost, or held up
//     in the network) when the next attempt starts; with one token for
//     both, that late command could act on the lock the next attempt took
//     (a late cleanup deleting it). [Attempt] gets its attempt number so
//     it can never be tempted to reuse one.
//   - When the context ends, the error is errors.Join(ErrNotObtained,
//     ctx.Err()); when the tries run out, it wraps ErrNotObtained and says
//     how many.
//   - A release, and the cleanup of an attempt that failed, runs on
//     [Detach]: the caller's values, not its cancellation, bounded by
//     [ReleaseTimeout].
package retry

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"
)

const (
	// MinDelay and MaxDelay bound the default backoff: the delay after the
	// first failed try is drawn from [0, 2ms), and the ceiling doubles with
	// each further failure up to 64ms.
	MinDelay = 2 * time.Millisecond
	MaxDelay = 64 * time.Millisecond

	// ReleaseTimeout bounds a command that must run after its caller gave
	// up or was cancelled: a release, or the cleanup of an attempt whose
	// reply was lost.
	ReleaseTimeout = 2 * time.Second

	// ReceiptTTL is how long a release's receipt lives (see the lock
	// packages' release.lua): long enough to answer every re-send of the
	// release that its caller still waits for, which all start within
	// ReleaseTimeout of the first.
	ReceiptTTL = 2 * ReleaseTimeout
)

// ReceiptMS is [ReceiptTTL] in milliseconds, as the release scripts take
// it (an ARGV).
var ReceiptMS = strconv.FormatInt(ReceiptTTL.Milliseconds(), 10)

// ReceiptFor returns how long, in milliseconds, as the release scripts take
// it, a release's receipt lives for a lock of ttl: ReceiptTTL (a release
// sent again answers from it), and at least ttl, since it also marks the
// token released: a command taking it that lands later (held up in the
// network after its caller gave up, or sent again by the client) takes
// nothing, where a SET NX re-created the key for a TTL, for nobody.
func ReceiptFor(ttl time.Duration) string {
	return strconv.FormatInt(max(ReceiptTTL, ttl).Milliseconds(), 10)
}

// A DelayFunc returns how long to wait before the next attempt, given how
// many attempts have failed so far (1 after the first). A delay <= 0 means
// try again at once. It is called from the goroutine running the lock
// method, so one shared by several locks must be safe for concurrent use.
type DelayFunc func(attempt int) time.Duration

// Backoff is the default DelayFunc: exponential backoff with full jitter.
// After the n-th failed attempt it waits a random time in
// [0, min(2ms*2^(n-1), 64ms)). Jitter spreads out waiters refused together;
// the cap bounds how long a freed lock sits unused before the next try.
// math/rand/v2 is fine here: a delay needs no unpredictability.
func Backoff(attempt int) time.Duration {
	ceiling := MinDelay
	for i := 1; i < attempt && ceiling < MaxDelay; i++ {
		ceiling *= 2
	}
	return rand.N(min(ceiling, MaxDelay))
}

// Doubling returns a DelayFunc for sending again a command that the
// servers were too busy to answer in time: after the n-th failed attempt it
// waits a random time in [d/2, d], where d = first·2^(n-1), at most
// ceiling (a ceiling below first is first). Half of d is fixed, so that a
// busy server gets at least that long to catch up; the other half is
// random, so that clients that timed out together do not come back
// together. A first <= 0 means no delay.
func Doubling(first, ceiling time.Duration) DelayFunc {
	ceiling = max(ceiling, first)
	return func(attempt int) time.Duration {
		d := first
		for i := 1; i < attempt && d < ceiling; i++ {
			d *= 2
		}
		d = min(d, ceiling)
		if d <= 0 {
			return 0
		}
		return d/2 + rand.N(d/2+1)
	}
}

// Policy is how a loop of attempts repeats them: a Lock's ([Do]), or a
// command sent again while the servers are busy ([Repeat]).
type Policy struct {
	// Delay is the wait after each failed attempt; nil means Backoff.
	Delay DelayFunc
	// Tries is how many attempts to make before giving up; 0 means no
	// limit.
	Tries int
	// Within bounds the time the loop may take: it starts no delay that
	// would end more than Within after its first attempt began, and stops
	// then as when the tries run out. 0 means no bound: only Tries and the
	// context end the loop.
	Within time.Duration
}

// An Attempt makes attempt number n (1, 2, ...) with a token of its own. It
// reports true once it holds the lock, false when the lock was taken (try
// again after the delay), or an error that ends the loop at once.
type Attempt func(ctx context.Context, n int) (bool, error)

// ErrExhausted is returned, wrapped, by [Repeat] when the tries or the time
// of its Policy ran out before an attempt reported done.
var ErrExhausted = errors.New("retry: attempts exhausted")

// Do calls attempt until it holds the lock, fails, runs out of tries, or
// ctx ends. It returns nil once an attempt holds the lock; the attempt's
// error as it is; errors.Join(notObtained, ctx.Err()) when ctx ends first
// (without any attempt if ctx had already ended); and an error wrapping
// notObtained, naming the tries, when they run out.
func Do(ctx context.Context, p Policy, notObtained error, attempt Attempt) error {
	n, why, err := loop(ctx, p, attempt)
	switch why {
	case ctxEnded:
		return errors.Join(notObtained, err)
	case exhausted:
		return fmt.Errorf("%w: still held after %d tries", notObtained, n)
	}
	return err
}

// Repeat is Do for a loop that is not a Lock's: attempt reports true once
// it is done (a release that the servers answered, say). Repeat returns
// nil once an attempt is done; the attempt's error as it is; ctx's error
// (see [CtxErr]) when ctx ends first; and an error wrapping [ErrExhausted],
// naming the tries, when the tries or Policy.Within run out. What the last
// attempt found is the caller's to keep, in attempt's closure.
func Repeat(ctx context.Context, p Policy, attempt Attempt) error {
	n, why, err := loop(ctx, p, attempt)
	if why == exhausted {
		return fmt.Errorf("%w: %d tries", ErrExhausted, n)
	}
	return err
}

// Why loop stopped.
type stop int

const (
	finished  stop = iota // an attempt was done, or failed: its error, or nil
	ctxEnded              // the context ended: its error
	exhausted             // the tries or the time ran out
)

// loop is the one retry loop, under Do and Repeat. It returns how many
// attempts it made, why it stopped, and the error that goes with why.
func loop(ctx context.Context, p Policy, attempt Attempt) (int, stop, error) {
	delay := p.Delay
	if delay == nil {
		delay = Backoff
	}
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	var start time.Time // read only for Within: a clock read costs a Lock more than its mutexes
	if p.Within > 0 {
		start = time.Now()
	}
	for n := 1; ; n++ {
		if err := CtxErr(ctx); err != nil {
			return n - 1, ctxEnded, err
		}
		ok, err := attempt(ctx, n)
		if err != nil || ok {
			return n, finished, err
		}
		if p.Tries > 0 && n >= p.Tries {
			return n, exhausted, nil
		}
		d := max(delay(n), 0)
		if p.Within > 0 && time.Since(start)+d > p.Within {
			return n, exhausted, nil
		}
		if timer == nil {
			timer = time.NewTimer(d)
		} else {
			timer.Reset(d)
		}
		select {
		case <-ctx.Done():
			return n, ctxEnded, ctx.Err()
		case <-timer.C:
		}
	}
}

// CtxErr returns ctx.Err(), or [context.DeadlineExceeded] once ctx's
// deadline has passed even if ctx has not noticed yet: go-redis sets socket
// deadlines from ctx, and under load the socket's "i/o timeout" can come
// before the context's own timer fires. Either way the caller's deadline is
// what ended the attempt, and the error must say so.
func CtxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}

// Failed returns the error of an attempt whose command failed with err:
// errors.Join(notObtained, the context's error) when ctx has ended (see
// [CtxErr]), since then the caller's deadline cut the command short, not
// Redis (go-redis reports an i/o timeout); otherwise err as it is.
func Failed(ctx context.Context, notObtained, err error) error {
	if cerr := CtxErr(ctx); cerr != nil {
		return errors.Join(notObtained, cerr)
	}
	return err
}

// Detach returns a context with ctx's values but not its cancellation or
// deadline, bounded by ReleaseTimeout instead: for a release, which must run
// even when the caller's context has ended (a deferred Unlock after the
// request was cancelled), and for the cleanup of an attempt that failed.
// Its deadline is between ReleaseTimeout-detachSlack and ReleaseTimeout
// from now. Call the CancelFunc when done, as with context.WithTimeout.
//
// The deadline is shared: one timer serves every Detach of a detachSlack
// interval, instead of a timer per release. A timer of its own made each
// release add a timer earlier than any the Go runtime held (go-redis's
// connection deadlines are further out, at its ReadTimeout of 3s), and the
// runtime then wakes an idle thread to watch the new one: a thread wake-up
// per release, a cost the bench's uncontended cell shows.
func Detach(ctx context.Context) (context.Context, context.CancelFunc) {
	return detached{Context: context.WithoutCancel(ctx), b: currentBound(time.Now())}, noCancel
}

// detachSlack is how much shorter than ReleaseTimeout a Detach bound may
// be: a shared bound is replaced once less than ReleaseTimeout-detachSlack
// of it is left.
const detachSlack = ReleaseTimeout / 20

// A bound is a deadline shared by the Detach calls of one interval.
type bound struct {
	ctx      context.Context
	cancel   context.CancelFunc // never called: the deadline frees it
	deadline time.Time
}

var shared atomic.Pointer[bound]

// currentBound returns the shared bound, or a new one if less than
// ReleaseTimeout-detachSlack of it is left at now (or more than
// ReleaseTimeout: a now earlier than the one it was made for).
func currentBound(now time.Time) *bound {
	b := shared.Load()
	if b != nil {
		if left := b.deadline.Sub(now); left >= ReleaseTimeout-detachSlack && left <= ReleaseTimeout {
			return b
		}
	}
	nb := &bound{deadline: now.Add(ReleaseTimeout)}
	nb.ctx, nb.cancel = context.WithDeadline(context.Background(), nb.deadline)
	if shared.CompareAndSwap(b, nb) {
		return nb
	}
	nb.cancel()
	return shared.Load() // another call replaced it just now
}

// detached has the values of the context it embeds (a WithoutCancel one)
// and the deadline and cancellation of its bound.
type detached struct {
	context.Context
	b *bound
}

func (d detached) Deadline() (time.Time, bool) { return d.b.deadline, true }
func (d detached) Done() <-chan struct{}       { return d.b.ctx.Done() }
func (d detached) Err() error                  { return d.b.ctx.Err() }

// AfterFunc makes context.WithTimeout, WithCancel and AfterFunc on a
// detached context register with its bound's context, as they would with
// a context of package context, instead of starting a goroutine each.
func (d detached) AfterFunc(f func()) (stop func() bool) { return context.AfterFunc(d.b.ctx, f) }

func noCancel() {}
