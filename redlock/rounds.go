package redlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/locklab/locklab/internal/retry"
	"github.com/locklab/locklab/internal/take"
)

// This file is Redlock's rule: a round on every node, a majority, and the
// validity left. The calls themselves are in nodes.go.
//
// The algorithm.
//
// The algorithm is the one on the Redis distributed locks page,
// https://redis.io/docs/latest/develop/use/patterns/distributed-locks/,
// with the SETs sent in parallel as the page recommends:
//
//  1. Read the monotonic clock: t0.
//  2. Send SET key token NX PX ttl to all N nodes at once, with a fresh
//     random 128-bit token for this attempt. Wait until a majority, N/2+1,
//     has answered OK, or else for every reply, but for each node at most
//     the per-node timeout ([WithNodeTimeout]); a node that has not answered
//     by then counts as failed. The SET is a script (take.lua), whose
//     reply says what the key held: nothing (set now), our own token (this
//     SET was sent twice, its first reply lost: the node is ours) or
//     another's (the node is taken); and which refuses a token already
//     released on that node (a SET that lands after its attempt gave up,
//     or after Unlock, takes nothing).
//  3. If a majority answered OK, compute the validity (below). The lock is
//     held if it is positive, until t0 + ttl − drift ([Mutex.Until]).
//  4. Otherwise delete the token where it may be: the nodes that took it
//     and those whose answer is unknown (an error: a reply may have been
//     lost after the SET was done). Then try again after a random delay
//     ([WithRetry]), with a new token: a late command of this attempt can
//     then never act on what the next one takes. If so many nodes failed
//     that no majority was possible, give up at once with
//     [ErrQuorumUnreachable], unless they only did not answer in time
//     (busy, not down): then try again while Lock's context lives.
//
// Release ([Mutex.Unlock]) and extension ([Mutex.Extend]) run an
// owner-checked script on every node in parallel; an extension counts only
// if a majority was extended with validity left, recomputed as in step 3.
//
// Lock does not wait for the slowest nodes once a majority holds its
// token: with 5 nodes, the 4th and 5th replies would add their latency to
// every acquisition and buy no safety (step 3 needs a majority only). The
// SETs still in flight finish in the background, each bounded by the
// per-node timeout. Unlock releases at once the nodes whose SET has ended,
// and leaves a node whose SET is still on its way to that SET: it releases
// the node when its reply comes back (see attempt), so a late SET never
// leaves a key behind. Unlock of a lock taken that way likewise returns
// once a majority has released (the lock is free from then on).
// [Mutex.Settle] waits for whatever is still in flight: for tests that
// read the nodes, or before closing the clients.
//
// Validity.
//
//	validity = ttl − elapsed − drift
//	drift    = ttl × 1% + 2ms
//
// elapsed is measured on Go's monotonic clock from just before the first
// SET was sent until the majority's last reply was in (after
// [HookAcquiredQuorum] returns, so a pause there counts). drift follows redlock-rb and redsync:
// 1% for clocks that count time at slightly different rates, 1ms for the
// millisecond precision of Redis expiry, and 1ms of minimum drift. With the
// default 8s ttl, drift is 82ms, and a round that took 3ms leaves 7.915s.
//
// Why this is safe, under the assumptions below: every key of the majority
// was written after t0, so each node keeps it until at least t0 + ttl by
// that node's clock. If the node's clock and ours count elapsed time within
// 1% of each other, none of those keys expires before t0 + ttl − drift by
// our clock. Any two majorities of N nodes share a node, and SET NX fails on
// a node that still has our key, so while our majority stands no other
// client can gather one. Hence no one else holds the lock before Until.
//
// Assumptions, and what it does not guarantee.
//
// The argument holds only if:
//
//   - clocks drift boundedly: the nodes and the client count elapsed time at
//     rates within 1% of each other, and no clock jumps. Redis expires keys
//     by the wall clock, not a monotonic one, so a node whose clock is
//     stepped forward drops our key early, and another client can then win
//     a majority that includes that node;
//   - the holder finishes its protected work before [Mutex.Until]. A process
//     pause after Lock returned (a GC pause, SIGSTOP, a page fault), or a
//     write that sits in the network, can let the holder act after its lock
//     has expired and another client has taken it. Nothing on the client side
//     can rule this out; the protected resource has to reject stale writers,
//     for example with the fencing tokens of package fencing;
//   - a node that crashes comes back with the key (AOF with appendfsync
//     always) or stays down for longer than the TTL (delayed restart). A node
//     that restarts at once without its data lets a second client win a
//     majority that includes it;
//   - the nodes are independent masters, not replicas of one another.
//
// The debate.
//
// Martin Kleppmann (https://martin.kleppmann.com/2016/02/08/how-to-do-distributed-locking.html)
// argues that Redlock's safety rests on bounded network delay, bounded
// pauses and bounded clock error, which real systems violate, so a paused
// client or a jumping clock gives two holders. For correctness he wants a
// consensus-based lock service and fencing tokens checked by the storage on
// every write, which Redlock cannot issue since it has no monotonic counter.
//
// Salvatore Sanfilippo (antirez, http://antirez.com/news/101) replies that
// every lock with auto-release has the paused-holder problem, and that
// Redlock's elapsed-time check catches any delay during acquisition, needing
// only clocks that count time at about the same rate, not synchronized ones.
// He argues that a store able to order fencing tokens could be the lock
// itself, and that Redlock's unique random token already allows a
// check-and-set on the resource.
//

// drift is the allowance for clock drift between this process and the
// nodes over a lease of ttl: 1% of ttl (clocks that count elapsed time at
// rates up to 1% apart) plus 2ms (1ms for the millisecond precision of
// Redis expiry, 1ms of minimum drift), as redlock-rb and redsync compute it.
func drift(ttl time.Duration) time.Duration {
	return ttl/100 + 2*time.Millisecond
}

// validity is how long a lock stays valid after a round that took elapsed,
// counted from the round's start: ttl − elapsed − drift(ttl). The lock is
// held only if it is positive.
func validity(ttl, elapsed time.Duration) time.Duration {
	return ttl - elapsed - drift(ttl)
}

func (m *Mutex) quorum() int { return len(m.clients)/2 + 1 }

// unreachable reports whether so many nodes failed that the rest cannot
// form a majority.
func (m *Mutex) unreachable(res result) bool {
	return len(m.clients)-len(res.failed) < m.quorum()
}

func (m *Mutex) quorumErr(op string, res result) error {
	head := fmt.Errorf("redlock: %s %q: %d of %d nodes failed, quorum %d: %w",
		op, m.key, len(res.failed), len(m.clients), m.quorum(), ErrQuorumUnreachable)
	return errors.Join(append([]error{head}, res.failed...)...)
}

// busy reports whether a round missed a majority only because nodes did
// not answer in time: on a loaded machine, nodes that are up. Such a round
// is worth sending again; one that nodes refused or failed is not.
func (m *Mutex) busy(res result) bool { return m.unreachable(res) && res.onlyTimeouts() }

// resend is how a round that busy nodes did not answer is sent again: the
// first pause is the per-node timeout, each further one twice the last, up
// to ceiling, with half of each jittered ([retry.Doubling]: a crowd that
// timed out together must not come back together and keep the nodes
// busy), for up to within (0: until the caller's context ends).
func (m *Mutex) resend(ceiling, within time.Duration) retry.Policy {
	return retry.Policy{Delay: retry.Doubling(m.o.nodeTimeout, ceiling), Within: within}
}

// outcome classifies one acquisition attempt.
type outcome int

const (
	acquired  outcome = iota // a majority, with validity left
	contended                // no majority free: others hold the key
	tooLate                  // a majority, but no validity left
	failed                   // ctx ended, or quorum unreachable
)

// setRound sends SET key tok NX PX ttl to every node, as take.lua (which
// refuses a token already released on that node: a SET of an attempt
// given up, or of a lock unlocked, that lands late takes nothing), and,
// if a majority took tok with validity left, records a as held. It
// releases nothing. It returns once a majority said OK; owns then marks
// only the nodes that had answered. take.lua says what a refusing node
// holds, which makes it safe to send twice: a node whose first reply was
// lost, and that go-redis asked again, answers that it holds our token.
// One script per node per round.
func (m *Mutex) setRound(ctx context.Context, a *attempt) (outcome, result, error) {
	if err := retry.CtxErr(ctx); err != nil {
		return failed, result{}, errors.Join(ErrNotObtained, err)
	}
	ttl := m.o.ttl
	keys := m.releaseKeys(a.tok) // the key, the queue and tok's receipt; take.lua reads KEYS[1] and KEYS[3]
	run := func(ctx context.Context, c Client) (int64, string, error) {
		return take.Run(ctx, c, keys[0], keys[2], a.tok, m.ttlMS)
	}
	start := time.Now() // monotonic; before the first SET is sent
	res := m.fanOut(ctx, m.quorum(), func(ctx context.Context, _ int, c Client) (int64, error) {
		code, prev, err := run(ctx, c)
		if err == nil && code == take.Taken && slices.Contains(a.earlier, prev) {
			// A late SET of this Lock's earlier round holds the node:
			// ours, and given up. Free the node, and ask again.
			if err := releaseScript.Run(ctx, c, m.releaseKeys(prev), prev, m.receiptMS, "1").Err(); err != nil {
				return 0, err
			}
			code, _, err = run(ctx, c)
		}
		if err != nil {
			return 0, err
		}
		if take.Held(code) {
			return 1, nil // ours: set now, or by the first run of this script
		}
		// Someone else's token, or ours released already: nothing changed.
		return 0, nil
	}, a.landed, nil)
	if res.ok >= m.quorum() {
		m.f.At(ctx, HookAcquiredQuorum)
		if validity(ttl, time.Since(start)) > 0 {
			owns := make([]bool, len(res.replies))
			for i, r := range res.replies {
				owns[i] = r.err == nil && r.code > 0
			}
			m.hold(a, start.Add(ttl-drift(ttl)), owns, nil)
			return acquired, res, nil
		}
	}
	elapsed := time.Since(start)
	switch err := retry.CtxErr(ctx); {
	case err != nil:
		return failed, res, errors.Join(ErrNotObtained, err)
	case res.ok >= m.quorum():
		return tooLate, res, fmt.Errorf("%w: %q: a majority answered after %v, leaving no validity of the %v ttl",
			ErrNotObtained, m.key, elapsed.Round(time.Microsecond), ttl)
	}
	return contended, res, fmt.Errorf("%w: %q: set on %d of %d nodes, quorum %d",
		ErrNotObtained, m.key, res.ok, len(m.clients), m.quorum())
}

// try is one attempt with a fresh token: a SET round and, unless it
// acquired, the release of its token everywhere. For a quorum that was
// unreachable only because nodes did not answer in time it reports
// contended, so that Lock tries again; for nodes that failed otherwise,
// failed with the error.
//
// earlier are the tokens of this Lock's earlier rounds whose fate is
// unknown somewhere; try appends tok to it when this round's is.
func (m *Mutex) try(ctx context.Context, tok string, earlier *[]string) (outcome, error) {
	a := m.newAttempt(tok, setOnly)
	if earlier != nil {
		a.earlier = *earlier
	}
	out, res, err := m.setRound(ctx, a)
	if out == acquired {
		return out, nil
	}
	if earlier != nil && res.unknown() {
		*earlier = append(*earlier, tok)
		if len(*earlier) > maxEarlier {
			*earlier = (*earlier)[1:]
		}
	}
	m.cleanUp(ctx, a, res)
	if out == contended {
		m.contended.Store(true) // a Lock with a Notifier queues at once next time
	}
	if out == contended && m.unreachable(res) {
		if m.busy(res) {
			return contended, m.quorumErr("lock", res)
		}
		return failed, m.quorumErr("lock", res)
	}
	return out, err
}

// maxEarlier bounds the earlier tokens a Lock remembers: a late SET older
// than that many rounds has long expired or been found.
const maxEarlier = 8
