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
//     128-bit token. Wait for every reply, but for each node at most the
//     per-node timeout ([WithNodeTimeout]); a node that has not answered by
//     then counts as failed.
//  3. If a majority, N/2+1, answered OK, compute the validity (below). The
//     lock is held if it is positive, until t0 + ttl − drift ([Mutex.Until]).
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
// # Validity
//
//	validity = ttl − elapsed − drift
//	drift    = ttl × 1% + 2ms
//
// elapsed is measured on Go's monotonic clock from just before the first
// SET was sent until the last reply was in (after [HookAcquiredQuorum]
// returns, so a pause there counts). drift follows redlock-rb and redsync:
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
// # Goroutines
//
// Each round (acquire, extend, release) starts one goroutine per node and
// waits for them only up to the per-node timeout. With a client that
// honours context deadlines (go-redis Options.ContextTimeoutEnabled) every
// goroutine ends by then, as its call is cancelled. With one that does not, a
// call to a frozen node stays blocked after the method returned, and its
// goroutine exits when the call returns: at that client's ReadTimeout or
// WriteTimeout, when the node answers, or when the client is closed. No
// goroutine outlives the closing of the clients passed to [New].
package redlock
