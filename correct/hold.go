package correct

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/frame"
	"github.com/locklab/locklab/internal/keyslot"
	"github.com/locklab/locklab/internal/retry"
	"github.com/locklab/locklab/internal/take"
)

// A holder is the part of a [Mutex] that takes the key, holds it and gives
// it back: the client, the key and the keys beside it, the TTL, and the
// current hold. The waiters ([waiter]) get the holder, not the Mutex:
// waiting needs the key's commands and nothing of the Mutex's frame (its
// argument check, its gate, its observer).
type holder struct {
	client   Client
	key      string
	base     string // the prefix of the keys kept beside key (keyslot.Base)
	queue    string // the wait queue's key
	ttl      time.Duration
	ttlMS    any          // ttl in milliseconds, as the scripts take it
	receipt  any          // how long a release's receipt lives (retry.ReceiptFor), as the scripts take it
	notifier *Notifier    // nil when Lock polls
	f        *frame.Frame // the Mutex's frame: its hook

	// The fields above are set by New and never change.

	// contended hints that other clients are waiting: the last acquisition
	// had to queue, or the last Unlock handed the lock over. Lock with a
	// Notifier then queues at once instead of trying SET NX first.
	contended atomic.Bool

	mu        sync.Mutex // protects token, releasing, until and since
	token     string     // our value in the key; "" when not held
	releasing string     // the token an Unlock is releasing now; see claimRelease
	until     time.Time  // local expiry estimate; zero when not held
	since     time.Time  // when this hold began, for observers
}

// acquire makes one attempt with tok: take.lua sets key to tok, NX, with
// the TTL, unless tok was released already. It never overwrites a lock that
// is held, and its answer says whose token it met: none (it set the key),
// our own (this is the script sent a second time, its first reply lost),
// someone else's (the lock is taken). start is a moment just before the
// script is sent, read by the caller (see Until): the lease counts from
// it.
//
// A script, not SET NX: an attempt given up while its command was held in
// the network is released at once (below), and that release can land
// before the command. A SET NX landing after it re-created the key for a
// whole TTL, held by nobody; take.lua finds the release's receipt and
// takes nothing.
func (h *holder) acquire(ctx context.Context, tok string, start time.Time) (bool, error) {
	if err := retry.CtxErr(ctx); err != nil {
		return false, errors.Join(ErrNotObtained, err)
	}
	code, _, err := take.Run(ctx, h.client, h.key, keyslot.Receipt(h.base, tok), tok, h.ttlMS)
	if err != nil {
		// No reply does not mean Redis did not run it: the reply may have
		// been lost, or ctx may have ended while it was on the wire.
		// Release tok, so a failed attempt never leaves a lock behind that
		// nobody will release, and one still on its way takes nothing.
		_, relErr := h.giveUp(ctx, tok, byHolder)
		if cerr := retry.CtxErr(ctx); cerr != nil {
			return false, errors.Join(ErrNotObtained, cerr, relErr)
		}
		return false, errors.Join(fmt.Errorf("correct: acquire %q: %w", h.key, err), relErr)
	}
	if !take.Held(code) { // another holds it, or tok was released already
		return false, nil
	}
	// The answer came now: too late to hand the lock over? (see Mutex.Lock)
	now := time.Now()
	if frame.LateAt(start, now, h.ttl) {
		return false, h.tooLate(ctx, tok, start, "SET")
	}
	h.hold(tok, start, now)
	h.f.At(ctx, HookAcquired)
	return true, nil
}

// tooLate gives back the lock that tok holds, whose lease counted from sent
// (when what, the command that gave or renewed it, was sent) is too short
// to return: it releases the key owner-checked (which hands it to the next
// waiter, if any), detached from ctx's cancellation as Unlock is, so that
// the key is not left held by nobody until its TTL. It returns a
// frame.Short, or, if the release failed, that failure joined to its
// message.
func (h *holder) tooLate(ctx context.Context, tok string, sent time.Time, what string) error {
	err := h.f.TooLate(ErrNotObtained, what, sent, h.ttl, "the lock was given back")
	if _, relErr := h.release(ctx, tok, byHolder); relErr != nil {
		return errors.Join(err, relErr)
	}
	return frame.Short{Err: err}
}

// A releaser says who runs a release, for release.lua's ARGV[3].
type releaser int

const (
	byHolder releaser = iota // Unlock, or an attempt giving back what it took
	byWaiter                 // a waiter giving up: its token leaves the queue first
)

// release runs the release script for tok, detached from ctx's
// cancellation and bounded by retry.ReleaseTimeout: it deletes the key, or
// hands the lock to the oldest live waiter in the queue, if the key holds
// tok; byWaiter, it first takes tok out of the queue. It returns the
// script's code: 1 deleted, 2 handed over, 0 not ours.
func (h *holder) release(ctx context.Context, tok string, by releaser) (int64, error) {
	return h.runRelease(ctx, tok, by, releaseScript.Run)
}

// giveUp is release for a caller that gives up on tok after a command of
// it got no answer (it may have run, or may still be on its way). It is
// sent as EVAL, with the script's source, not EVALSHA: a server that lost
// its script cache (a restart, a failover) answers an EVALSHA held up in
// the network with NOSCRIPT when it lands, and nobody is left waiting to
// send EVAL then; the late command it was to stop would take the lock for
// a TTL, for nobody.
func (h *holder) giveUp(ctx context.Context, tok string, by releaser) (int64, error) {
	return h.runRelease(ctx, tok, by, releaseScript.Eval)
}

func (h *holder) runRelease(ctx context.Context, tok string, by releaser,
	send func(context.Context, redis.Scripter, []string, ...any) *redis.Cmd) (int64, error) {
	ctx, cancel := retry.Detach(ctx)
	defer cancel()
	flag := keepArg
	if by == byWaiter {
		flag = abandonArg
	}
	keys := []string{h.key, h.queue, keyslot.Receipt(h.base, tok)}
	n, err := send(ctx, h.client, keys, tok, channelArg, flag, h.receipt).Int64()
	if err != nil {
		return 0, fmt.Errorf("correct: release %q: %w", h.key, err)
	}
	if n != 0 {
		h.contended.Store(n == 2) // 2: handed to a waiter
	}
	return n, nil
}

// extend sets the key's TTL to ttl, counted from just before the script is
// sent, if the key holds tok, and moves until accordingly. It reports
// false, changing nothing, when the key does not hold tok.
func (h *holder) extend(ctx context.Context, tok string, ttl time.Duration) (bool, error) {
	start := time.Now() // before the script is sent, as in acquire
	n, err := extendScript.Run(ctx, h.client, []string{h.key}, tok, ttl.Milliseconds()).Int64()
	if err != nil {
		return false, fmt.Errorf("correct: extend %q: %w", h.key, err)
	}
	if n != 1 {
		return false, nil
	}
	h.mu.Lock()
	if h.token == tok { // not unlocked by another goroutine meanwhile
		h.until = start.Add(ttl)
	}
	h.mu.Unlock()
	return true, nil
}

// hold records tok as held, with a lease counted from leaseStart, since
// now (when the acquisition's answer came).
func (h *holder) hold(tok string, leaseStart, now time.Time) {
	h.mu.Lock()
	h.token, h.until, h.since = tok, leaseStart.Add(h.ttl), now
	h.mu.Unlock()
}

// held returns the token of the current hold ("" when none) and the end of
// its lease as this Mutex counts it.
func (h *holder) held() (string, time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.token, h.until
}

// claimRelease returns the token of the current hold and marks it as the
// one an Unlock is releasing, so that a second Unlock of the same hold
// running at the same moment finds nothing to release (and says
// ErrNotHeld) instead of sending the release again, which the release's
// receipt would answer as done: two callers told they released one hold.
// It returns "" when there is no hold to release. releaseDone clears the
// mark; a release whose outcome is unknown keeps the hold, and Unlock may
// be called again.
func (h *holder) claimRelease() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.token == "" || h.releasing == h.token {
		return ""
	}
	h.releasing = h.token
	return h.token
}

// releaseDone clears the mark claimRelease set for tok.
func (h *holder) releaseDone(tok string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.releasing == tok {
		h.releasing = ""
	}
}

// forget clears the held state if it still belongs to tok (a concurrent
// Lock may already have replaced it with a newer acquisition) and returns
// how long it was held, for the observer: 0 when there is none (the clock
// is read for nobody).
func (h *holder) forget(tok string) time.Duration {
	if n := h.notifier; n != nil {
		n.unregister(tok) // a hand-off hold: its token is no longer ours
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.token != tok {
		return 0
	}
	var held time.Duration
	if h.f.Obs != nil {
		held = time.Since(h.since)
	}
	h.token, h.until, h.since = "", time.Time{}, time.Time{}
	return held
}
