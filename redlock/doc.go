// Package redlock implements Redlock: a lock on one key held on a majority
// of N independent Redis masters, which survives the crash or partition of
// a minority of them and is held only for a validity time that subtracts
// the time the acquisition took and an allowance for clock drift.
//
// Use it where a single Redis primary is not enough: with asynchronous
// replication a failover can promote a replica that never saw the lock, and
// a second client takes it. Redlock replaces the primary with a vote of
// independent servers, at the price of timing assumptions (below). Give
// [New] one client per independent master, never replicas of one another:
//
//	m := redlock.New([]redlock.Client{c1, c2, c3, c4, c5}, "lock:invoice-42")
//	if err := m.Lock(ctx); err != nil {
//		return err // ErrQuorumUnreachable when too many nodes fail
//	}
//	defer m.Unlock(context.Background())
//	// work, finished before m.Until()
//
// # The rule
//
// Lock sends SET key token NX PX ttl to every node at once (as a script
// that also refuses a token already released on that node), with a fresh
// random token per attempt, and holds the lock if a majority, N/2+1, said
// OK with validity left
// (https://redis.io/docs/latest/develop/use/patterns/distributed-locks/):
//
//	validity = ttl − elapsed − drift,   drift = ttl × 1% + 2ms
//
// counted from just before the first SET. [Mutex.Until] is when that
// validity ends; protected work must end before it, or be extended with
// [Mutex.Extend]. 3 nodes tolerate the loss of 1, 5 of 2.
//
// # What it survives, and what it does not
//
// It survives the crash, failover or partition of a minority of nodes, the
// clock of one node jumping, a reply lost and the command sent again, a
// command delivered late (a late SET of an attempt that gave up, or of a
// lock already unlocked, takes nothing: each release leaves a receipt of
// its token on the node for a TTL, and the SET refuses a released token), a holder that crashes (its keys expire after the TTL), and
// nodes that may evict keys (Lock refuses them, [ErrEviction];
// [WithEvictionCheck]).
//
// It holds only while these assumptions hold, and does not survive their
// failure on enough nodes to make a majority without the holder:
//   - clocks count time at rates within 1% of each other and do not jump
//     (Redis expires keys by its wall clock);
//   - the holder finishes before Until: a GC pause or SIGSTOP past it, or a
//     write held up in the network past it, lets a second holder in, and
//     only fencing tokens checked by the resource (package fencing) refuse
//     the late write;
//   - nodes keep their keys across restarts (AOF with appendfsync always,
//     or a restart delayed past the TTL); a node restarted at once without
//     its data forgets the lock.
//
// Martin Kleppmann (https://martin.kleppmann.com/2016/02/08/how-to-do-distributed-locking.html)
// and Salvatore Sanfilippo (http://antirez.com/news/101) argue over whether
// that is enough.
//
// # Waiting
//
// Lock polls by default: a random 50-250ms between attempts, up to 32, as
// redsync does. With a [Notifier] ([WithNotifier]) it instead waits in a
// fair queue on every node and is handed the lock by the holder's Unlock,
// first come first served ([NewNotifier] refuses a *redis.ClusterClient
// as a node: there Lock polls). Nodes too busy to answer in time are asked
// again while Lock's context lives; when so many nodes fail (answer with
// an error, or cannot be reached) that no majority is possible, Lock ends
// at once with [ErrQuorumUnreachable] and one [NodeError] per failed node.
//
// Lock and Unlock return at a majority; the calls to slower nodes finish
// in the background, and [Mutex.Settle] waits for them. A SET that lands
// after its attempt gave up, or after its lock was released, is released
// when its reply comes back. Unlock releases even when its context is
// cancelled, bounded by [WithNodeTimeout] per node. Each round starts one
// goroutine per node, which ends when its call returns ([WithNodeTimeout],
// or the client's own timeouts for a client that ignores context
// deadlines): none outlives the closing of the clients given to [New]. A
// Notifier runs one goroutine per node until [Notifier.Close].
//
// The locklab lab labs/08-redlock breaks each assumption above for real.
package redlock
