package redlock

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"time"
)

// This file is a waiter: one Lock call waiting in the queues, from its
// first round until it holds the lock or leaves.

// A waiter is one Lock call waiting in the queues.
//
// Its token changes at every round: "<id>.<generation>". Each round
// retires the previous token on every node (acquire.lua) and counts only
// the nodes that hold the new one, as the round's replies and the hand-off
// messages for that generation report. So every node counted was set to
// the current token after the round started (since), and a late message
// about an earlier generation can never be counted.
type waiter struct {
	m     *Mutex
	reg   *registration
	id    string // "<notifier id>.<ttl ms>.<random>": the token without its generation
	score string // when Lock was called, in µs since the Unix epoch: the waiter's place in every queue
	ttl   string // the TTL in milliseconds, for the scripts
	gen   int
	cur   *attempt // the current generation's claim on the nodes

	held  []bool    // held[i]: node i holds the current token
	since time.Time // sent before the current round: every node in held was set after it
	split time.Duration
	ahead int // how many waiters were ahead at the last round, in the queue of its ranker (roundOnce)

	// retired[i] are tokens retired by rounds that failed on node i: the
	// node may still hold or queue them. The next round that reaches node i
	// retires them there (and comes soon, see unretired); Unlock, or
	// leaving the queues, cleans up the rest. At most maxRetired per node
	// are remembered (an older one left behind holds its node for at most
	// a TTL).
	retired [][]string
}

// token returns the waiter's current token, "<id>.<generation>".
func (w *waiter) token() string { return w.id + "." + strconv.Itoa(w.gen) }

// heldCount returns how many nodes hold the current token.
func (w *waiter) heldCount() int {
	n := 0
	for _, h := range w.held {
		if h {
			n++
		}
	}
	return n
}

// partial reports whether the waiter holds some nodes, but not a majority.
func (w *waiter) partial() bool {
	n := w.heldCount()
	return n > 0 && n < w.m.quorum()
}

// unretired reports whether a round failed to retire an earlier token on
// some node: the waiter runs its next round soon, as in a split, since that
// token may hold the node and only this waiter's rounds can free it.
func (w *waiter) unretired() bool {
	for _, r := range w.retired {
		if len(r) > 0 {
			return true
		}
	}
	return false
}

// wait joins the queues with a first round and waits until a majority of
// nodes hold the waiter's token: handed over by holders' Unlocks (as
// messages report) or taken in the waiter's own rounds. A waiter that holds
// no node runs a round every ttl/4: it refreshes its place in every queue
// and takes the lock from a holder that died, once its keys expire. A
// waiter that holds some nodes, but not a majority, runs one after
// firstSplitCheck, doubling up to the per-node timeout: the rest of a
// release arrives within that, so a partial hold that lasts is a split,
// which its rounds resolve (see acquire.lua and queue.go).
func (w *waiter) wait(ctx context.Context, old string) error {
	m := w.m
	if err := w.round(ctx, old); err != nil {
		return err
	}
	if ok, err := w.tryHold(ctx); ok || err != nil {
		return err
	}
	m.f.At(ctx, HookQueued)

	check := time.NewTimer(w.nextCheck())
	defer check.Stop()
	for {
		select {
		case <-w.reg.signal:
			wasPartial := w.partial()
			w.reg.take(w.held)
			if ok, err := w.tryHold(ctx); ok || err != nil {
				return err
			}
			if !wasPartial && w.partial() {
				check.Reset(w.nextCheck())
			}
		case <-check.C:
			if err := w.round(ctx, w.token()); err != nil {
				return err
			}
			if ok, err := w.tryHold(ctx); ok || err != nil {
				return err
			}
			check.Reset(w.nextCheck())
		case <-w.reg.recheck:
			if err := w.round(ctx, w.token()); err != nil {
				return err
			}
			if ok, err := w.tryHold(ctx); ok || err != nil {
				return err
			}
			if !check.Stop() {
				select {
				case <-check.C:
				default:
				}
			}
			check.Reset(w.nextCheck())
		case <-ctx.Done():
			return w.abandon(ctx, errors.Join(ErrNotObtained, ctx.Err()))
		case <-m.o.notifier.done:
			return w.abandon(ctx, errors.Join(ErrNotObtained, errNotifierClosed))
		}
	}
}

// nextCheck returns when the waiter should next run a round itself.
func (w *waiter) nextCheck() time.Duration {
	if w.partial() || w.unretired() {
		d := w.split
		w.split = min(2*w.split, max(w.m.o.nodeTimeout, firstSplitCheck))
		return d
	}
	w.split = firstSplitCheck
	// A waiter near the head looks every ttl/4: it is next, and a lost
	// message or a dead holder is its to find. One far back looks less
	// often, up to every 2 TTLs: a crowd of a thousand waiters each
	// looking every ttl/4 would keep the nodes too busy to hand over.
	// (Its place is kept by its score; a resubscribed Notifier has every
	// waiter look at once.)
	every := max(w.m.o.ttl/checkFraction, time.Millisecond)
	return every * time.Duration(min(1+w.ahead/lookRank, lookMaxFactor))
}

// tryHold takes the lock if a majority of nodes hold the current token
// with validity left, counted from the start of the round that sent it.
// When no validity is left (the waiter was paused, or waited long between
// rounds), it runs one more round, which resets the TTL on the nodes it
// keeps, and tries once more; after that it goes on waiting.
func (w *waiter) tryHold(ctx context.Context) (bool, error) {
	m := w.m
	ttl := m.o.ttl
	for refreshed := false; w.heldCount() >= m.quorum(); refreshed = true {
		m.f.At(ctx, HookAcquiredQuorum)
		if validity(ttl, time.Since(w.since)) > 0 {
			cleanup := make([]nodeCleanup, len(w.held))
			for i, h := range w.held {
				cleanup[i] = nodeCleanup{dequeue: !h, retired: w.retired[i]}
			}
			m.hold(w.cur, w.since.Add(ttl-drift(ttl)), slices.Clone(w.held), cleanup)
			return true, nil
		}
		if refreshed {
			break
		}
		if err := w.round(ctx, w.token()); err != nil {
			return false, err
		}
	}
	return false, nil
}

// abandon leaves every queue and passes on any node that holds the
// waiter's token (it may have been handed over as the waiter gave up),
// then returns cause. It runs detached from ctx's cancellation, as Unlock
// does.
func (w *waiter) abandon(ctx context.Context, cause error) error {
	var now []bool
	if w.cur != nil {
		now = w.cur.giveUp() // a round of it still in flight undoes itself when it ends
	}
	cleanup := make([]nodeCleanup, len(w.held))
	for i := range cleanup {
		cleanup[i] = nodeCleanup{dequeue: true, retired: w.retired[i]}
	}
	if res := w.m.release(ctx, w.token(), cleanup, now, 0, nil); w.m.unreachable(res) {
		return errors.Join(cause, w.m.quorumErr("leave queues", res))
	}
	return cause
}
