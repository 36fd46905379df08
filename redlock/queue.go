package redlock

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/locklab/locklab/internal/keyslot"
	"github.com/locklab/locklab/internal/retry"
	"github.com/locklab/locklab/internal/token"
)

// Waiting.
//
// How a Lock waits for a held lock decides its latency, its fairness and
// the load it puts on the nodes; it never decides safety, which rests on
// the quorum and the validity rule of rounds.go alone. There are two strategies.
//
// Polling, the default: an attempt, then a random 50-250ms sleep
// ([WithRetry]), up to 32 attempts ([WithTries]), as redsync does. Each
// failed attempt costs a SET on every node, and a release on those it
// took; between a release and the next attempt the lock sits free; and
// nobody is in line, so the client that just released usually takes the
// lock straight back, and under steady contention some waiters wait many
// times longer than others.
//
// Hand-off, with a [Notifier] ([WithNotifier]): the waiters queue on every
// node, ranked the same way everywhere, and each node hands itself to the
// best of them. Per node there is the lock key and its queue (key "{k}:q"
// for lock "k"), a sorted set of waiters' tokens scored by the time each
// waiter first wanted the lock, ties broken by token, so that every node
// ranks the same waiters in the same order.
//
//   - Lock makes the usual SET round while the lock looks free (so an
//     uncontended Lock and Unlock cost one parallel round each, as when
//     polling). When that misses a majority, or when the last Lock or
//     Unlock of this Mutex showed others waiting, the waiter runs a round
//     of acquire.lua on every node: take the node if it is free and nobody
//     better waits there, else join its queue. Then it sleeps.
//   - Unlock runs release.lua on every node: check the owner; pop the best
//     waiter; PUBLISH to its Notifier and, if it listens, SET the key to
//     its token with its TTL; leave a receipt. Each node does this on its
//     own, and since all rank alike, all normally hand over to the same
//     waiter, which holds the lock as soon as a majority of them have: one
//     hop after the release, with no idle gap and no race between waiters.
//
// Every script is safe to run twice: ZADD NX adds a waiter once, and a
// release answers a second run from its receipt and never pops a second
// waiter.
//
// Why a queue on every node, rather than one queue on one node (the
// "line") that hands the other nodes on: every process would have to
// agree which node is the line, and nothing in a list of clients says so
// (each process lists the nodes in its own order and may know a node by
// another address: TestNodeOrderIsEachProcessOwn). While the line is down
// or frozen nobody can queue, so losing one node, which Redlock exists to
// survive, would turn waiting back into polling. And Unlock would make two
// round trips in a row, and the waiter would count nodes on the releaser's
// word instead of each node's own message. A queue on every node needs no
// agreement, hands over with any minority down (TestHandoffWithANodeDown),
// and costs one round trip on each side. Its per-node commands are all
// needed: without the queue's PEXPIRE the queues of dead waiters leak, and
// without the ZRANK a crowd of waiters would be paced blindly.
//
// Safety. A node's key changes hands only through an owner-checked script
// run by the client that holds it (release.lua, or acquire.lua giving up a
// node it holds), or by expiry, exactly as in plain Redlock, so the
// argument under "Validity" in rounds.go still holds with one change: a waiter does not
// know when a node handed itself over. It therefore counts the lease from
// the start of its last round, which precedes every hand-off it counts,
// and Until is that moment + ttl − drift: it errs early, never late. For
// this to be true, a waiter's token changes at every round (it ends in a
// generation number), each round retires the previous token on every node,
// and only nodes that hold the current token count, as the round's replies
// and the hand-off messages for that generation report; a message about an
// older token, however late it arrives, is never counted. The rounds every
// ttl/4 (below) keep that start recent, so a lock handed over after a long
// wait still has at least about three quarters of its TTL; if none is left
// (the waiter was paused), one more round resets the TTL on the nodes it
// keeps before Lock returns.
//
// Fairness. In the common case the order is first come, first served on
// every node. Exceptions: the rank uses
// each client's wall clock, so clients whose clocks differ by d are served
// as if they had arrived up to d apart; the first SET round may take a
// lock that is free while others still queue (after a dead holder's keys
// expired); a polling Mutex on the same key gets it only while nobody is
// queued; and waiters caught in a split (below) may be served in another
// order among themselves.
//
// Failure modes, and what bounds each:
//
//   - The lost wake-up: the SET round is refused, and before the waiter
//     queues the holder releases with nobody queued, so no message will
//     come. The waiter's first round finds the nodes free and takes them
//     ([HookRefused] marks the window).
//   - A dead waiter: nobody is subscribed to its channel, so PUBLISH
//     reports no receiver, and the same script moves on to the next
//     waiter. A dead waiter's token is dropped from a queue when met; a
//     queue expires one TTL after the last round of any waiter on it (a
//     round never shortens the queue's TTL).
//   - A waiter gone from a live process (it gave up while its join was on
//     the wire, so the join landed after it left), or a token a waiter
//     retired: PUBLISH reaches its Notifier, which finds nobody counting
//     that token and releases the node on the spot: one hop, not a TTL.
//     A node handed to the token just retired by a round still on its way
//     to that node is left to that round, which renames it and keeps it
//     whoever joined since (acquire.lua); released at once, it went to the
//     next waiter, and a waiter caught between two rounds lost its turn
//     (FIFO broken, seen under -race). A round ends as soon as a majority
//     holds its token, by replies and hand-offs together, without waiting
//     for a node slow to answer.
//   - A frozen waiter (SIGSTOP, a long GC pause) keeps its subscription,
//     so it is handed the lock and keeps it, unused, until it resumes or
//     the TTL runs out.
//   - A dead holder: nobody releases. Its keys expire after the TTL, and a
//     waiter that holds no node runs a round every ttl/4, which hands each
//     free node to the best live waiter (perhaps itself). Bound: ttl plus
//     ttl/4 plus a round.
//   - A lost message, or a node whose subscription was down at the
//     waiter's turn (it looked dead there and was skipped): the waiter's
//     rounds find the node already handed over, or queue again there in
//     its old place (the score does not change). A waiter near the head
//     runs one every ttl/4; one with r waiters ahead every
//     ttl/4 × min(1 + r/8, 8), so that a crowd does not keep the nodes
//     too busy to hand over; a Notifier whose subscription died (it pings
//     it, and subscribes again) has every waiter run one at once.
//   - A split: nodes handed to different waiters, because a waiter's round
//     had not reached some node yet when the holder released it, or a round
//     failed there, or the first SET rounds of several clients each took a
//     few nodes. Nobody may hold a majority, and nobody would release.
//     A waiter that holds some nodes but not a majority runs a round after
//     2ms, then 4ms, doubling up to the per-node timeout. In that round it
//     queues again on every node where it is missing, and gives each node
//     it holds to the best live waiter queued there if that waiter ranks
//     before it (acquire.lua), keeping it otherwise. No deadlock: let W be
//     the best live waiter. W is queued on every node it does not hold
//     once its next round has run (2ms away if it holds some node, at most
//     ttl/4 if none), and from then on each node ends up with W: a holder
//     with a majority releases to the best waiter queued, W; a waiter
//     holding a minority gives its nodes to W at its next round; a free
//     node goes to W at anyone's round; a dead client's key expires. So W
//     gets a majority within a few split rounds (ttl/4 if it held nothing
//     and missed a queue; a TTL more for a dead holder's keys), then the
//     next best, and so on. In these rounds nodes only move to waiters
//     that rank better, so they cannot ping-pong.
//   - A node down or frozen (a minority): rounds and releases wait for it
//     at most the per-node timeout ([WithNodeTimeout]) and go on with the
//     others; hand-offs keep working on the majority. With a majority down,
//     Lock leaves the queues and returns [ErrQuorumUnreachable]; with a
//     majority only slow (no answer in time), the round is tried again
//     after a growing, jittered pause while Lock's context lives.
//   - A waiter that gives up (its ctx ends, or its Notifier is closed)
//     leaves every queue; a node handed to it at that moment is passed to
//     the next waiter in the same script.
//   - A late release, after the lease expired and another client took the
//     lock: the owner check fails on every node, and release.lua changes
//     neither the key nor the queue.
//   - A round that timed out on a node may or may not have retired the
//     waiter's previous token there. Unlock (or giving up) also releases
//     such tokens, up to 8 per node, and a hand-off to one is passed on by
//     the Notifier; a round still on its way when its generation is given
//     up undoes itself when its reply comes back.
//
// Hand-off needs Pub/Sub on every node: independent masters, as Redlock
// requires anyway.
//

// queueKey returns the wait queue's key for the lock key: in the same
// Redis Cluster slot, as the scripts touch both (see internal/keyslot).
func queueKey(key string) string { return keyslot.Base(key) + ":q" }

// lockQueued is Lock with a Notifier. While the lock looks free it makes
// one SET round, as without a Notifier; when that misses a majority, when
// the last Lock or Unlock showed other clients waiting, or when another
// Lock of its Notifier is in for the key (see Notifier.enter), it waits in
// the queues.
func (m *Mutex) lockQueued(ctx context.Context) error {
	if err := retry.CtxErr(ctx); err != nil {
		return errors.Join(ErrNotObtained, err)
	}
	n := m.o.notifier
	ttl := strconv.FormatInt(m.o.ttl.Milliseconds(), 10)
	w := &waiter{
		m:       m,
		id:      n.id + "." + ttl + "." + token.New(),
		score:   strconv.FormatInt(time.Now().UnixMicro(), 10),
		ttl:     ttl,
		held:    make([]bool, len(m.clients)),
		split:   firstSplitCheck,
		retired: make([][]string, len(m.clients)),
	}
	reg, err := n.register(w.id)
	if err != nil {
		return errors.Join(ErrNotObtained, err)
	}
	w.reg = reg
	held := false
	defer func() {
		if held {
			reg.hold() // messages for it are old news until Unlock unregisters it
		} else {
			n.unregister(w.id)
		}
	}()

	others, leave := n.enter(m.key)
	defer leave()
	old := "" // the token to retire in the first round in the queues
	if !m.contended.Load() && !others {
		a := m.newAttempt(w.token(), setThenQueue)
		out, res, err := m.setRound(ctx, a)
		switch {
		case out == acquired:
			held = true
			return nil
		case out == failed:
			m.cleanUp(ctx, a, res)
			return err
		case m.unreachable(res) && !m.busy(res):
			m.cleanUp(ctx, a, res)
			return m.quorumErr("lock", res)
		}
		old = a.tok // some nodes may hold it (see attempt.joins): the first round retires it
		a.giveUp()  // a SET of it that lands late is released when its reply comes
		m.contended.Store(true)
		m.f.At(ctx, HookRefused)
	}
	err = w.wait(ctx, old)
	held = err == nil
	return err
}
