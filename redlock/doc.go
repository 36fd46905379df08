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
// # The rule
//
// Lock sends SET key token NX PX ttl GET to every node at once
// (https://redis.io/docs/latest/develop/use/patterns/distributed-locks/)
// and holds the lock if a majority, N/2+1, said OK with validity left:
//
//	validity = ttl − elapsed − drift,   drift = ttl × 1% + 2ms
//
// counted from just before the first SET. [Mutex.Until] is when that
// validity ends; protected work must end before it. rounds.go argues the
// rule; nodes.go is the transport (parallel calls, each bounded by
// [WithNodeTimeout]).
//
// It holds only if clocks count time at rates within 1% and do not jump,
// the holder finishes before Until (a GC or SIGSTOP pause past it lets a
// second holder in: only fencing tokens, package fencing, make the
// resource refuse the late one), nodes keep their keys across restarts
// (AOF with appendfsync always, or a restart delayed past the TTL), and the
// nodes are independent masters. Martin Kleppmann
// (https://martin.kleppmann.com/2016/02/08/how-to-do-distributed-locking.html)
// and Salvatore Sanfilippo (http://antirez.com/news/101) argue over whether
// that is enough; rounds.go sums up both sides.
//
// # Faults
//
// What the fault scoreboard (make faults) measures it against. It survives
// a lost reply sent again, a command delivered late (SET ... GET knows its
// own token, every script gives the same answer run twice, and a late SET
// of a given-up attempt releases itself), the failover or loss of a
// minority of nodes, a clock jump on one node, a killed holder (its keys
// expire after the TTL), and eviction (Lock refuses nodes that evict). It
// does not survive a holder paused past its validity, a write delayed in
// the network past it (fencing tokens make the resource refuse it), nodes
// restarted without data, or clock jumps, on enough nodes to make a
// majority without the holder.
//
// # Waiting, and the user's world
//
// Lock polls by default (a random 50-250ms between attempts, up to 32, as
// redsync does; each attempt with a fresh token), or, with a [Notifier]
// ([WithNotifier]), waits in a fair queue on every node and is handed the
// lock by the holder's Unlock (queue.go describes the protocol and its
// failure modes). Every command is safe to send twice (go-redis does, on
// its default options, when a reply is lost): SET ... GET recognises our
// own token, release.lua answers a second run from a receipt, acquire.lua
// adds a waiter once. Nodes too busy to answer in time are asked again
// while Lock's context lives; nodes that refuse end Lock at once with
// [ErrQuorumUnreachable]. Lock refuses nodes that evict keys or a user
// who may not run the scripts ([WithEvictionCheck]).
//
// Lock and Unlock return at a majority; the calls to slower nodes finish
// in the background ([Mutex.Settle] waits for them), and a SET that lands
// after its lock was released is released when its reply comes back.
// Each round starts one goroutine per node, which ends when its call
// returns (at the client's own timeouts for a client that ignores context
// deadlines); no goroutine outlives the closing of the clients given to
// [New]. A [Notifier] runs one goroutine per node until [Notifier.Close].
package redlock
