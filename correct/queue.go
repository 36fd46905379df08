package correct

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/frame"
	"github.com/locklab/locklab/internal/keyslot"
	"github.com/locklab/locklab/internal/retry"
)

// The hand-off protocol, chosen by WithNotifier: waiters queue, first come
// first served, and the holder gives the lock to the oldest live one.
//
//   - Lock tries take.lua while the lock looks free (two round trips per
//     uncontended Lock and Unlock, as polling). When it is taken, the
//     waiter joins a Redis list with enqueue.lua (its token carries the id
//     of its Notifier and its TTL) and sleeps. A Mutex that just handed the
//     lock over queues at once next time, skipping the try that would
//     fail.
//   - Unlock is one script (release.lua): check the key holds our token;
//     pop the oldest waiter; PUBLISH to its Notifier; if someone heard,
//     SET the key to its token with its TTL, else pop the next. The waiter
//     wakes already holding the lock: one hop after the release, with no
//     idle gap and no race between waiters.
//
// Every script is safe to run twice, because a reply can be lost and
// go-redis then sends the command again: enqueue.lua does not queue a
// token that is already queued, release.lua answers a second run from the
// receipt the first left, queued.lua only reads unless it finds the lock
// free. Its failure modes, and what bounds each:
//
//   - The lost wake-up: a waiter refused by its try joins the queue just
//     after the holder released with nobody queued, so no message will
//     come. enqueue.lua looks at the lock in the same step as it queues:
//     a free lock is taken (or handed to an older live waiter) at once.
//   - A dead waiter: its process is gone, nobody is subscribed to its
//     channel, PUBLISH reaches no one. The release moves on to the next
//     waiter in the same script; the lock is never handed to the dead.
//   - A waiter that gave up in a live process (its ctx ended) leaves the
//     queue (release.lua with ARGV[3] "1"), and passes the lock on if it
//     was handed it as it gave up. That release also marks its token
//     released, so a join or a look still on the wire when it left takes
//     nothing and queues nothing when it lands. Should its entry stay in
//     the queue all the same (the release never arrived), its Notifier
//     still hears the hand-off, finds nobody waiting for that token, and
//     releases it on the spot (see Notifier): one extra hop, never a TTL.
//   - A frozen waiter (SIGSTOP, a long GC pause) still has its
//     subscription, so it is handed the lock and keeps it, without using
//     it, until it resumes or the TTL runs out. When it resumes, a
//     hand-off message older than a lease is not taken at its word: the
//     waiter renews the lock first (owner-checked), or queues again.
//   - A dead holder: nobody releases. The key expires after its TTL; every
//     waiter looks at the lock itself every ttl/4 (queued.lua) and hands a
//     free lock to the oldest live waiter, so the queue order holds.
//   - A lost message, or a Notifier whose subscription was down when its
//     waiter's turn came (it looked dead and was passed by): the same look
//     finds the lock already handed over, or finds the waiter no longer
//     queued; it then queues again under a new token, so that a late
//     message for the old token cannot pass for a fresh hand-off. A
//     Notifier also pings its subscription and, when it dies silently,
//     subscribes again and has its waiters look at once.
//
// After a hand-off, Until counts the lease from the last moment the waiter
// knows came before the hand-off (when it queued, or its last look that
// found the lock held by someone else), so it errs early, never late. When
// less than half the TTL is left of that (a slow link or message, a look
// long after the hand-off), the waiter renews the lock before it takes it,
// and gives it on if the renewal too comes back with less than half left
// (see claim): Lock never returns a lease that is over, or nearly.
// Hand-off needs Pub/Sub on the server that holds the key: a single
// primary, alone or behind Sentinel. On Redis Cluster use polling (see
// Notifier).

// queueTTLFactor sets how long a queue outlives its last live waiter: a
// waiter renews it at every look (every ttl/4) to at least this many TTLs.
const queueTTLFactor = 2

// queue is the waiter that waits in the lock's FIFO queue for a hand-off.
type queue struct{ n *Notifier }

func (q queue) wait(ctx context.Context, h *holder, sent time.Time) error {
	// The first try and the join share a token, so a try that landed
	// whose reply was lost is found by the join, which answers that the
	// key holds it.
	before, tok := sent, q.n.newToken(h.ttl) // before precedes the try

	var late frame.Shorts // the SETs and hand-offs that came too late, given back
	if !h.contended.Load() {
		ok, err := h.acquire(ctx, tok, before)
		given := frame.IsShort(err)
		if ok, err = late.Keep(ok, err); ok || err != nil {
			return err
		}
		h.contended.Store(true)
		if given {
			// Taken, but too late, and given back: queue under a new token.
			before, tok = time.Now(), q.n.newToken(h.ttl)
		} else {
			h.f.At(ctx, HookRefused)
		}
	}
	for {
		got, err := late.Keep(q.waitAs(ctx, h, tok, before))
		if err != nil || got {
			return late.Join(err, ErrNotObtained)
		}
		// Passed by as dead, or given back: queue again under a new token.
		before, tok = time.Now(), q.n.newToken(h.ttl)
	}
}

// waitAs waits in the queue under tok until the lock is handed to tok or
// taken by it (true), the waiter was passed by and must queue again under
// a new token (false, nil), the lock came too late and was given back (a
// frame.Short: queue again too), or it gives up (an error). before is a
// moment known to precede anything that put tok in the key.
func (q queue) waitAs(ctx context.Context, h *holder, tok string, before time.Time) (bool, error) {
	n := q.n
	w, err := n.register(tok)
	if err != nil {
		return false, errors.Join(ErrNotObtained, err)
	}
	won := false
	defer func() {
		if !won {
			n.unregister(tok)
		}
	}()
	// before precedes any hand-off to tok, and any SET of tok.
	code, err := h.queueScript(ctx, enqueueScript, tok)

	if err != nil {
		return false, h.abandon(ctx, tok, h.queueErr(ctx, "queue", err))
	}
	switch code {
	case 0:
	case 3: // tok was released already: never for a live waiter; queue again
		return false, nil
	default:
		won, err = h.claim(ctx, tok, before)
		return won, err
	}
	h.f.At(ctx, HookQueued)

	look := time.NewTimer(h.lookEvery())
	defer look.Stop()
	for {
		select {
		case <-w.wake:
			won, err = h.claim(ctx, tok, before)

			if won || err != nil {
				return won, err
			}
			continue
		case <-look.C:
		case <-w.look:
		case <-ctx.Done():
			return false, h.abandon(ctx, tok, errors.Join(ErrNotObtained, ctx.Err()))
		case <-n.done:
			return false, h.abandon(ctx, tok, errors.Join(ErrNotObtained, errNotifierClosed))
		}
		sent := time.Now()
		code, err := h.queueScript(ctx, queuedScript, tok)
		switch {
		case err != nil:
			return false, h.abandon(ctx, tok, h.queueErr(ctx, "check queue", err))
		case code == 1:
			won, err = h.claim(ctx, tok, sent)
			return won, err
		case code == 2:
			if won, err = h.claim(ctx, tok, before); won || err != nil {
				return won, err
			}
		case code == 3:
			return false, nil
		default:
			before = sent
		}
		look.Reset(h.lookEvery())
	}
}

// claim makes tok's lock this Mutex's, with a lease counted from
// leaseStart, a moment known to precede the hand-off (or the SET) that gave
// the key to tok. When less than half the TTL is left of that lease (the
// answer or the message was slow, the process was frozen, the message sat
// unread), the key may well still be tok's for longer by Redis's clock, but
// no bound on it can be proved from here: claim renews the key first,
// owner-checked, and counts the lease from the moment the renewal was
// sent. When even that comes back with less than half the TTL left (a link
// whose round trip takes half the TTL), claim gives the lock back at once
// (to the next waiter) and returns a frame.Short: Lock never returns a
// lease that is over, or nearly (see Mutex.Lock). When the renewal finds
// the key no longer tok's, it returns a frame.Short too: the hand-off took
// tok out of the queue, so the waiter queues again.
func (h *holder) claim(ctx context.Context, tok string, leaseStart time.Time) (bool, error) {
	now := time.Now()
	if frame.LateAt(leaseStart, now, h.ttl) {
		leaseStart = now
		n, err := extendScript.Run(ctx, h.client, []string{h.key}, tok, h.ttl.Milliseconds()).Int64()
		if err != nil {
			return false, h.abandon(ctx, tok, h.queueErr(ctx, "renew a late hand-off", err))
		}
		if n != 1 {
			// Gone (or another's) by the time the renewal landed: tok has
			// left the queue with the hand-off, so queue again.
			return false, frame.Short{Err: fmt.Errorf("%w: %q: handed over with less than half the %v ttl left by the time it was known, and gone when the renewal reached Redis",
				ErrNotObtained, h.key, h.ttl)}
		}
		if now = time.Now(); frame.LateAt(leaseStart, now, h.ttl) {
			return false, h.tooLate(ctx, tok, leaseStart, "renewal")
		}
	}
	h.notifier.held(tok)
	h.hold(tok, leaseStart, now)
	h.f.At(ctx, HookAcquired)
	return true, nil
}

// queueScript runs enqueue.lua or queued.lua for tok.
func (h *holder) queueScript(ctx context.Context, s *redis.Script, tok string) (int64, error) {
	return s.Run(ctx, h.client, []string{h.key, h.queue, keyslot.Receipt(h.base, tok)}, tok, h.ttlMS, channelPrefix, h.queueTTL()).Int64()
}

// lookEvery is how often a queued waiter looks at the lock itself.
func (h *holder) lookEvery() time.Duration { return max(h.ttl/4, time.Millisecond) }

// queueErr wraps a queue step's error: joined with ErrNotObtained and the
// caller's ctx error when ctx ended it, so that Lock's contract holds.
func (h *holder) queueErr(ctx context.Context, step string, err error) error {
	return retry.Failed(ctx, ErrNotObtained, fmt.Errorf("correct: %s %q: %w", step, h.key, err))
}

// abandon takes tok out of the queue and, if the lock was handed to tok
// meanwhile, passes it on to the next waiter, then returns cause. It runs
// detached from ctx's cancellation, as Unlock does, and as a give-up (see
// giveUp): a join or a look of tok may still be on its way.
func (h *holder) abandon(ctx context.Context, tok string, cause error) error {
	if _, err := h.giveUp(ctx, tok, byWaiter); err != nil {
		return errors.Join(cause, err)
	}
	return cause
}

// queueTTL is the queue's least TTL for the scripts, in milliseconds.
func (h *holder) queueTTL() string {
	return strconv.FormatInt(queueTTLFactor*h.ttl.Milliseconds(), 10)
}
