// Package fencing implements a Redis lock whose every acquisition gets a
// fencing token strictly larger than all earlier ones on that key, and a
// [Store] that accepts writes to a resource only in strictly increasing
// token order, so a holder paused past its lease cannot overwrite what a
// newer holder wrote.
//
// No lock with a lease is safe on its own. A holder can stop for longer
// than its lease (a GC pause, a page fault, SIGSTOP, a write packet stuck
// in the network) and then act on a lock that expired while it was away
// and that someone else now holds. Checking the lease before writing does
// not help: the pause can fall between the check and the write. Fencing
// moves the check to the resource, the one place that sees every write in
// order (Martin Kleppmann, "How to do distributed locking", 2016):
//
//	A acquires, token 33; A pauses; A's lease runs out
//	B acquires, token 34; B writes with 34: accepted (34 > 33)
//	A wakes, writes with 33: rejected (33 <= 34), the row keeps B's data
//
// Send the token with every write, and have the resource refuse old ones,
// as [Store.Write] does (or do the same in your own storage: a
// conditional UPDATE ... WHERE last_token < $tok):
//
//	m := fencing.New(client, "lock:order:1001")
//	if err := m.Lock(ctx); err != nil {
//		return err
//	}
//	defer m.Unlock(context.Background())
//	err := store.Write(ctx, "order:1001", data, m.Token()) // ErrStaleToken if a newer holder wrote
//
// Tokens come from a counter key beside the lock key, in its cluster slot:
// "{orders}:fence" for lock "orders", "{orders}:lock:fence" for
// "{orders}:lock". A refused acquisition spends no token. The counter is
// never deleted, so take lock names from a bounded set, not from request
// ids; deleting a counter restarts its tokens at 1, and a store that saw
// larger ones then refuses every write until the counter passes them.
//
// # What it guarantees, and what it does not
//
// With the Store (or an equal check) in front of the resource, a late
// write is refused however late it comes: after a holder paused past its
// TTL, a write held up in the network, or the Redis server's clock jumping
// forward. A reply lost and the acquire sent again returns the same token;
// a command delivered late, a holder that crashes (its key expires after
// the TTL) and a server that may evict keys (Lock refuses it: an evicted
// counter would make tokens go back; [WithEvictionCheck]) are handled too.
//
// Mutual exclusion of the work itself still rests on timing, as for any
// lease lock: [Mutex.Until] counts the lease from just before the acquire
// was sent, and Lock returns only with at least half of it left, but
// nothing can see a pause that has not happened yet. The store cannot
// reject a late write that arrives before the newer holder's first write:
// it has not seen the newer token yet. That write is applied, then
// overwritten in token order; if the newer holder read the row before it
// and writes back a value computed from what it read, the late change is
// lost. When that matters, the newer holder writes its token to the row
// first, which fences the old holder out.
//
// # The limit: where tokens come from
//
// The counter lives on one Redis primary, and replication is asynchronous.
// If the primary acknowledges an INCR and dies before a replica has it,
// the promoted replica hands out a token again: A got 34 on the old
// primary, B gets 34 on the new one. The strict rule refuses whichever of
// their writes comes second, but if several INCRs were lost the counter
// falls back further, and a paused holder with 35 can then overwrite the
// write of B, which holds the lock now with 34. A restart without
// persistence resets the counter the same way. Waiting for replicas (WAIT)
// and appendfsync always narrow that window; they do not close it. A lock
// service built on consensus gives such numbers for free, as etcd's
// revision (package etcdlock) or ZooKeeper's zxid (package zklock).
//
// The locklab lab labs/09-fencing shows a paused holder's late write
// refused.
package fencing
