package redlock

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/keyslot"
	"github.com/locklab/locklab/internal/retry"
)

// This file is the release of a token on the nodes: Unlock's, a failed
// SET round's cleanup, and a waiter's leaving the queues.

// cleanUp gives up a SET round that did not acquire and releases its token
// where it may be: on the nodes that took it, and on those whose answer is
// unknown (an error: the SET may have landed without a reply). A node that
// answered "someone else holds it" (take.lua returned another token)
// has nothing of ours; a node whose SET is still running releases itself
// when it ends. The release is skipped when no node needs it.
func (m *Mutex) cleanUp(ctx context.Context, a *attempt, res result) {
	now := a.giveUp()
	need := false
	for i, rp := range res.replies {
		now[i] = now[i] && (rp.err != nil || rp.code != 0)
		need = need || now[i]
	}
	if need {
		m.release(ctx, a.tok, nil, now, 0, nil)
	}
}

// nodeCleanup is what a release must also do on one node for a lock
// obtained in the queues.
type nodeCleanup struct {
	dequeue bool     // our token may still be in this node's queue
	retired []string // tokens retired in rounds that failed on this node
}

// release fires HookBeforeRelease and runs the release script for tok on
// every node where now[i] (every node if now is nil), with ctx's values
// but not its cancellation; the other nodes release themselves when their
// call ends (see attempt) and answer as pending. With cleanup, node i also
// leaves the queue if cleanup[i].dequeue, and releases the tokens in
// cleanup[i].retired. It returns once enough nodes (if enough > 0) have
// released, as fanOut does. It records in the contended hint whether a
// node was handed to a waiter.
//
// A node that does not answer in time, whether the round waited for it or
// had already returned, is sent the release again in the background (see
// sweep), once per node for all the rounds that share tr (nil: this round
// only). A node's answer that comes after its round returned (an
// AutoPipeliner runs a queued command on its own context, past the
// per-node timeout) is kept in tr for the rounds' caller (see
// releases.merge).
func (m *Mutex) release(ctx context.Context, tok string, cleanup []nodeCleanup, now []bool, enough int, tr *releases) result {
	m.f.At(ctx, HookBeforeRelease)
	plain := []any{tok, m.receiptMS} // read concurrently, never written
	keys := m.releaseKeys(tok)
	call := func(ctx context.Context, i int, c Client) (int64, error) {
		if now != nil && !now[i] {
			return 0, errLater
		}
		args := plain
		if cleanup != nil && (cleanup[i].dequeue || len(cleanup[i].retired) > 0) {
			args = []any{tok, m.receiptMS, "0"}
			if cleanup[i].dequeue {
				args[2] = "1"
			}
			for _, r := range cleanup[i].retired {
				args = append(args, r)
			}
		}
		return runRelease(ctx, c, keys, args...)
	}
	if tr == nil {
		tr = newReleases(len(m.clients))
	}
	values := context.WithoutCancel(ctx)
	res := m.fanOut(values, enough, call, func(i int, code int64, err error) {
		if err == nil {
			tr.answered(i, code)
		}
		if isTimeout(err) && tr.swept[i].CompareAndSwap(false, true) {
			m.sweep(values, i, call)
		}
	}, nil)
	if res.ok > 0 {
		m.contended.Store(res.count(2) > 0)
	}
	return res
}

// releases is what the release rounds of one Unlock share: which nodes
// were handed to sweep, and each node's answer from any of the rounds,
// late ones included. The release script answers a repeat from its
// receipt, so any answer of a node says what the release did there.
type releases struct {
	swept []atomic.Bool // node i was handed to sweep

	mu      sync.Mutex
	codes   []int64       // node i's answer, where has[i]
	has     []bool        // node i answered some round
	changed chan struct{} // closed, and replaced, when a node answers
}

func newReleases(n int) *releases {
	return &releases{swept: make([]atomic.Bool, n), codes: make([]int64, n), has: make([]bool, n), changed: make(chan struct{})}
}

// answered records that node i answered a release with code.
func (r *releases) answered(i int, code int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.has[i] {
		return
	}
	r.codes[i], r.has[i] = code, true
	close(r.changed)
	r.changed = make(chan struct{})
}

// merge returns res with the nodes that failed or were pending in it but
// answered some round since (after its per-node timeout, say) counted as
// answered, and a channel closed when another node answers.
func (r *releases) merge(res result) (result, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !slices.ContainsFunc(res.replies, func(rp reply) bool { return rp.err != nil || rp.pending }) {
		return res, r.changed // every node answered this round: the common case, no copy
	}
	out := result{replies: slices.Clone(res.replies), ok: res.ok}
	for i := range out.replies {
		rp := &out.replies[i]
		if (rp.err != nil || rp.pending) && r.has[i] {
			*rp = reply{code: r.codes[i]}
			if rp.code > 0 {
				out.ok++
			}
		}
		if rp.err != nil {
			out.failed = append(out.failed, rp.err)
		}
	}
	return out, r.changed
}

// sweep sends node i's release, call, again in the background after it
// did not answer in time: the node was busy, or its client's connections
// were all in use on a loaded machine, so the release may never have been
// sent. Unlock has returned by then (a majority released), and nothing
// else would release that node: it kept the key for a whole TTL with
// nobody holding the lock, so that one more node down or busy stalled
// every client until the key expired. sweep sends again after a growing,
// jittered pause (see resend), each try bounded by retry.ReleaseTimeout,
// until the node answers, fails otherwise (down, or its client closed:
// the key then expires after the TTL, as Unlock documents), or a TTL has
// passed, after which no key written before the release is left. The
// script is owner-checked and answers a second run from its receipt, so a
// release that had landed after all changes nothing. Settle waits for it.
func (m *Mutex) sweep(ctx context.Context, i int, call nodeCall) {
	m.inflight.add(1)
	go func() {
		defer m.inflight.done()
		_ = retry.Repeat(ctx, m.resend(retry.ReleaseTimeout, m.o.ttl), func(ctx context.Context, n int) (bool, error) {
			if n == 1 {
				return false, nil // the release that timed out: pause first
			}
			ctx, cancel := retry.Detach(ctx)
			defer cancel()
			_, err := call(ctx, i, m.clients[i])
			return !isTimeout(err), nil
		})
	}()
}

// releaseKeys are release.lua's keys for tok.
func (m *Mutex) releaseKeys(tok string) []string {
	return []string{m.key, m.keys[1], keyslot.Receipt(keyslot.Base(m.key), tok)}
}

// runRelease runs release.lua on c, and again after a transport error
// (the connection broke: the reply may be lost although the script ran),
// up to releaseAsks times in all while ctx (the per-node timeout) lives:
// the script answers a repeat from its receipt, as the first run did, so
// the next answer says what happened. On a client whose retries are off
// (go-redis MaxRetries -1, a ClusterClient's node clients) a lost reply
// otherwise counted as a failed node: Unlock said "quorum unreachable" of
// a lock it had released; asked only once more, it still did when an
// AutoPipeliner's resent batch lost its connection too (the scoreboard's
// batch-lost schedule: redlock-5-poll, 1 of 347 releases). A node that
// resets every connection fails each ask at once, so the asks end within
// the round. An error reply, a timeout (see sweep) and ctx's end are
// answers.
func runRelease(ctx context.Context, c Client, keys []string, args ...any) (int64, error) {
	code, err := releaseScript.Run(ctx, c, keys, args...).Int64()
	for ask := 1; ask < releaseAsks && lostReply(ctx, err); ask++ {
		code, err = releaseScript.Run(ctx, c, keys, args...).Int64()
	}
	return code, err
}

// releaseAsks bounds how often runRelease asks one node in one round.
const releaseAsks = 4

// lostReply reports whether err may be a reply lost with its connection:
// an error that is neither the server's answer, nor a timeout, nor ctx's
// end, nor a closed client.
func lostReply(ctx context.Context, err error) bool {
	var re redis.Error
	return err != nil && ctx.Err() == nil && !errors.As(err, &re) && !isTimeout(err) && !errors.Is(err, redis.ErrClosed)
}
