// Package fencing implements a Redis lock whose every acquisition gets a
// fencing token strictly larger than all earlier ones on that key, and a
// [Store] that accepts writes to a resource only in strictly increasing
// token order, so a holder paused past its lease cannot overwrite what a
// newer holder wrote.
//
// No lock with a lease is safe on its own. A holder can stop for longer than
// its lease (a GC pause, a page fault, SIGSTOP, a write packet stuck in the
// network) and then act on a lock that expired while it was away and that
// someone else now holds. Checking the lease before writing does not help:
// the pause can fall between the check and the write. Fencing moves the check
// to the resource, which is the one place that sees every write in order
// (Martin Kleppmann, "How to do distributed locking", 2016):
//
//	A acquires, token 33; A pauses; A's lease runs out
//	B acquires, token 34; B writes with 34: accepted (34 > 33)
//	A wakes, writes with 33: rejected (33 <= 34), the row keeps B's data
//
// # The lock
//
// [Mutex.TryLock] runs one Lua script: if the lock is free it INCRs the
// key's counter and SETs the lock with a fresh random owner value, so a
// refused attempt consumes no token (mutex.go explains the details); the
// owner value is what Unlock and Extend check, and the token is returned
// apart, by [Mutex.Token].
//
// Besides the lock key, each lock has a counter key holding the last token
// issued, never deleted (token.go names it); [Store] applies the fencing
// rule in one conditional UPDATE (store.go).
//
// # Faults
//
// What the fault scoreboard (make faults) measures it against. With its
// Store in front of the resource it survives a holder paused past its TTL,
// a write delayed in the network past the TTL and a clock jump on the
// server (the store refuses the late write, whatever the timing), a lost
// reply sent again (the acquire run twice returns the same token), a
// command delivered late, a killed holder, and eviction (Lock refuses a
// server that evicts: an evicted counter would make tokens go back). It
// does not survive a failover before the counter replicates or a restart
// without data, when more than one token is lost (the limit below).
//
// # Timing
//
// Mutual exclusion of the work itself still rests on timing, as for any
// lease lock: it holds only while the holder finishes within its lease.
// [Mutex.Until] counts the lease from just before the acquire request was
// sent, so it never overstates it, but it cannot see a pause that has not
// happened yet, nor a Redis server whose clock jumps (Redis expires keys by
// wall-clock time).
//
// The store's guarantee needs no timing at all: however long a holder pauses
// and however late its write arrives, a write with token t is applied only if
// no write with a token of t or more was applied to that row before. What it
// cannot do is reject a late write that arrives before the newer holder's
// first write: the store has not seen the newer token yet. The late write is
// then applied and overwritten by the newer holder's write, in token order.
// A newer holder that read the row before that late write and writes back a
// value computed from it loses the late write's change; when that matters,
// the newer holder should write its token to the row first, which then
// fences the old holder out.
//
// # The limit: where tokens come from
//
// The counter lives on one Redis primary, and replication is asynchronous.
// If the primary acknowledges an INCR and dies before a replica has it, the
// promoted replica's counter is behind and hands out a token again: A got 34
// on the old primary, B gets 34 on the new one. The strict rule refuses
// whichever of their writes comes second, but if several INCRs were lost the
// counter can fall back further, and a paused holder with 35 can then
// overwrite the write of B, which holds the lock now with 34. A restart
// without persistence resets the counter the same way. Waiting for replicas
// (WAIT) and appendfsync always narrow the window; they do not close it. As
// Kleppmann put it, "you would need a consensus algorithm just to generate the
// fencing tokens": a lock service built on consensus gives such numbers for
// free, as etcd's revision or ZooKeeper's zxid. This package shows the
// mechanism on Redis and keeps that limit in view; it is not a replacement
// for one.
package fencing
