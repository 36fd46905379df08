// Package redlock implements Redlock: a lock on one key held on a majority
// of N independent Redis masters, which survives the crash or partition of
// a minority of them and is held only for a validity time that subtracts
// the time the acquisition took and an allowance for clock drift.
//
// It exists to teach what a single Redis master with asynchronous
// replication gets wrong (a failover can promote a replica that never saw
// the lock, and a second client takes it), and what replacing that master
// with a vote of independent nodes costs in turn: the lock is safe only
// under timing assumptions, and the labs break each one of them for real
// (a paused holder, a node restarted without its data, a clock jump).
//
// # Algorithm
//
// The algorithm is the one on the Redis distributed locks page,
// https://redis.io/docs/latest/develop/use/patterns/distributed-locks/,
// with the SETs sent in parallel as the page recommends:
//
//  1. Read the monotonic clock: t0.
//  2. Send SET key token NX PX ttl to all N nodes at once, with one random
//     128-bit token. Wait until a majority, N/2+1, has answered OK, or else
//     for every reply, but for each node at most the per-node timeout
//     ([WithNodeTimeout]); a node that has not answered by then counts as
//     failed.
//  3. If a majority answered OK, compute the validity (below). The lock is
//     held if it is positive, until t0 + ttl − drift ([Mutex.Until]).
//  4. Otherwise delete the token from every node, including those that did
//     not answer OK (a reply may have been lost after the SET was done), and
//     try again after a random delay ([WithRetry]). If so many nodes failed
//     that no majority was possible, give up at once with
//     [ErrQuorumUnreachable].
//
// Release ([Mutex.Unlock]) and extension ([Mutex.Extend]) run an
// owner-checked script on every node in parallel; an extension counts only
// if a majority was extended with validity left, recomputed as in step 3.
//
// Lock does not wait for the slowest nodes once a majority holds its
// token: with 5 nodes, the 4th and 5th replies would add their latency to
// every acquisition and buy no safety (step 3 needs a majority only). The
// SETs still in flight finish in the background, each bounded by the
// per-node timeout, and a Mutex sends its commands to each node in order:
// Unlock's release to a node goes out only after the SET to that node has
// ended, so a late SET can never land after the release and leave a key
// behind. Unlock of a lock taken that way likewise returns once a
// majority has released (the lock is free from then on), and its releases
// to the slower nodes finish in the background. [Mutex.Settle] waits for whatever is still in flight:
// for tests and labs that read the nodes, or before closing the clients.
//
// # Validity
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
// # Assumptions, and what it does not guarantee
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
// # The debate
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
// # Waiting
//
// How a Lock waits for a held lock decides its latency, its fairness and
// the load it puts on the nodes; it never decides safety, which rests on
// the quorum and the validity rule above alone. There are two strategies.
//
// Polling, the default: an attempt, then a random 50-250ms sleep
// ([WithRetry]), up to 32 attempts ([WithTries]), as redsync does. Each
// failed attempt costs a SET and a release on every node; between a
// release and the next attempt the lock sits free; and nobody is in line,
// so the client that just released usually takes the lock straight back
// and under steady contention some waiters wait many times longer than
// others.
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
//     waiter; SET the key to its token with its TTL; PUBLISH to its
//     Notifier. Each node does this on its own, and since all rank alike,
//     all normally hand over to the same waiter, which holds the lock as
//     soon as a majority of them have: one hop after the release, with no
//     idle gap and no race between waiters.
//
// Steady contention costs, per acquisition and per node, one round of
// acquire.lua (EVALSHA, GET, ZADD, PEXPIRE) and one of release.lua
// (EVALSHA, GET, ZPOPMIN, SET, PUBLISH): 45 commands over 5 nodes in 10
// round trips, however many wait.
//
// Safety. A node's key changes hands only through an owner-checked script
// run by the client that holds it (release.lua, or acquire.lua giving up a
// node it holds), or by expiry, exactly as in plain Redlock, so the
// argument under "Validity" still holds with one change: a waiter does not
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
// every node, and Jain's fairness index is 1. Exceptions: the rank uses
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
//     queue expires one TTL after the last round of any waiter on it.
//   - A frozen waiter (SIGSTOP, a long GC pause) keeps its subscription,
//     so it is handed the lock and keeps it, unused, until it resumes or
//     the TTL runs out.
//   - A dead holder: nobody releases. Its keys expire after the TTL, and a
//     waiter that holds no node runs a round every ttl/4, which hands each
//     free node to the best live waiter (perhaps itself). Bound: ttl plus
//     ttl/4 plus a round.
//   - A lost message, or a node whose subscription was down at the
//     waiter's turn (it looked dead there and was skipped): the waiter's
//     round every ttl/4 finds the node already handed over, or queues
//     again there in its old place (the score does not change).
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
//     Lock leaves the queues and returns [ErrQuorumUnreachable].
//   - A waiter that gives up (its ctx ends, or its Notifier is closed)
//     leaves every queue; a node handed to it at that moment is passed to
//     the next waiter in the same script.
//   - A late release, after the lease expired and another client took the
//     lock: the owner check fails on every node, and release.lua changes
//     neither the key nor the queue.
//   - A round that timed out on a node may or may not have retired the
//     waiter's previous token there. Unlock (or giving up) also releases
//     such tokens, up to 8 per node; one not cleaned up holds its node for
//     at most a TTL (a message for it is never counted).
//
// Hand-off needs Pub/Sub on every node: independent masters, as Redlock
// requires anyway.
//
// # Goroutines
//
// Each round (acquire, extend, release, a waiter's round in the queues)
// starts one goroutine per node and waits for them only up to the per-node
// timeout. With a client that honours context deadlines (go-redis
// Options.ContextTimeoutEnabled) every goroutine ends by then, as its call
// is cancelled. With one that does not, a call to a frozen node stays
// blocked after the method returned, and its goroutine exits when the call
// returns: at that client's ReadTimeout or WriteTimeout, when the node
// answers, or when the client is closed. No goroutine outlives the closing
// of the clients passed to [New]. A [Notifier] runs one goroutine per node
// from [NewNotifier] until [Notifier.Close].
package redlock
