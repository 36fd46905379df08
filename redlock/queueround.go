package redlock

import (
	"context"
	"errors"
	"time"

	"github.com/locklab/locklab/internal/retry"
)

// This file is a waiter's round in the queues: acquire.lua on every node,
// with a new token that retires the last one.

// maxRetired bounds how many retired tokens a waiter remembers per node
// for the final cleanup (see waiter.retired).
const maxRetired = 8

// round runs acquire.lua on every node with a new token, retiring old (""
// for none), and records which nodes hold the new token. When the round
// fails (ctx ended, quorum unreachable) it leaves the queues and returns
// the error.
//
// A round that missed a majority only because nodes did not answer in
// time (busy nodes) is sent again, retiring the token of the one that
// timed out, after a growing, jittered pause (a crowd retrying at once
// would keep them busy: see [Mutex.resend]), up to ttl/4, while ctx lives.
func (w *waiter) round(ctx context.Context, old string) error {
	m := w.m
	err := retry.Do(ctx, m.resend(m.o.ttl/checkFraction, 0), ErrNotObtained, func(ctx context.Context, n int) (bool, error) {
		if n > 1 {
			old = w.token() // the round that timed out
		}
		busy, err := w.roundOnce(ctx, old)
		return !busy, err
	})
	if err != nil {
		return w.abandon(ctx, err)
	}
	return nil
}

// roundOnce is one round. It reports busy when the round could not reach
// a majority only because nodes did not answer in time, and an error when
// it failed: ctx ended, or the quorum is unreachable. It does not leave the
// queues; round does.
func (w *waiter) roundOnce(ctx context.Context, old string) (busy bool, err error) {
	m := w.m
	if w.cur != nil {
		w.cur.giveUp() // retired by this round; a call of it that lands late is undone
	}
	w.gen++
	tok := w.token()
	w.cur = m.newAttempt(tok, queueRound)
	w.reg.setGen(w.gen, w.cur)
	start := time.Now() // before any node can set tok
	// Each node also retires the tokens that earlier rounds failed to
	// retire there: one may hold the node (a SET or a round that landed
	// there after all), and nobody else can tell it is stale.
	// A node that holds old although the waiter did not count it was
	// handed over while this round was on its way: the release chose this
	// waiter as the best queued there, and the node is kept (renamed)
	// whoever joined since. Given to a better waiter that joined late, as
	// a node the waiter knew it held (a split) is, it broke up a majority
	// in the making: in a burst of 1000 Locks a waiter handed all three
	// nodes lost two of them to late joiners in its next round.
	//
	// One node, a different one each round, says how many waiters are
	// ahead (the others would say the same, each for a ZRANK): it only
	// paces the waiter's rounds (nextCheck).
	args := make([][]any, len(m.clients))
	ranker := w.gen % len(m.clients)
	for i := range args {
		keep, rank := "0", "0"
		if old != "" && w.gen > 1 && !w.held[i] {
			keep = "1"
		}
		if i == ranker {
			rank = "1"
		}
		args[i] = append([]any{tok, w.score, w.ttl, old, keep, rank}, toAny(w.retired[i])...)
	}
	// The round ends when every node has answered, or as soon as a
	// majority holds tok, by their replies and hand-off messages together:
	// a node slow to answer (in a burst, its calls wait behind hundreds of
	// others) must not keep a waiter from a lock it already holds. Its
	// call goes on; if the lock is held by then, Unlock releases the node
	// when the call ends (see attempt.landed).
	gen := w.gen
	keys := m.releaseKeys(tok) // with tok's receipt: a round landing after tok's release takes nothing
	res := m.fanOut(ctx, 0, func(ctx context.Context, i int, c Client) (int64, error) {
		code, err := acquireScript.Run(ctx, c, keys, args[i]...).Int64()
		if err == nil && code > 0 {
			w.reg.handedOver(i, gen)
		}
		return code, err
	}, w.cur.landed, w.reg.majority())
	w.since = start
	w.ahead = 0 // if the ranker did not answer: look often
	for i, rp := range res.replies {
		w.held[i] = rp.err == nil && !rp.pending && rp.code > 0
		if i == ranker && rp.err == nil && !rp.pending && rp.code <= 0 {
			w.ahead = int(-rp.code)
		}
		switch {
		case rp.pending: // not known yet whether it retired old there
			if old != "" && len(w.retired[i]) < maxRetired {
				w.retired[i] = append(w.retired[i], old)
			}
		case rp.err == nil:
			w.retired[i] = nil // retired there now
		case old != "" && len(w.retired[i]) < maxRetired:
			w.retired[i] = append(w.retired[i], old)
		}
	}
	w.reg.take(w.held) // hand-offs that came before the replies
	switch err := retry.CtxErr(ctx); {
	case err != nil:
		return false, errors.Join(ErrNotObtained, err)
	case m.busy(res):
		return true, nil
	case m.unreachable(res):
		return false, m.quorumErr("lock", res)
	}
	return false, nil
}

// toAny returns ss as script arguments.
func toAny(ss []string) []any {
	a := make([]any, len(ss))
	for i, s := range ss {
		a[i] = s
	}
	return a
}
