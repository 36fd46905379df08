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
// [Mutex.TryLock] runs one Lua script (acquire.lua). Redis runs a script
// with nothing interleaved, so the three steps are one: if the lock key
// exists, it returns 0 and writes nothing; otherwise it INCRs the key's
// counter, SETs the lock to a fresh random owner value with NX PX ttl, and
// returns the new counter value, the token. A failed attempt therefore
// consumes no token. (The version in many write-ups, INCR then SET NX as two
// commands, burns a token on every refused attempt and can leave a token
// issued for a lock that was never taken.) The owner value, 128 random bits,
// is what [Mutex.Unlock] and [Mutex.Extend] check in their own scripts, so a
// holder never deletes or extends a lock it lost; the token is returned
// apart, by [Mutex.Token]. An extension keeps the token.
//
// When a reply is lost (a network error, or the context ending while the
// request was in flight) the script may have run. TryLock then releases the
// lock it may have taken, and the token it may have consumed is skipped.
// Tokens are strictly increasing, not gap-free.
//
// # Keys
//
// Besides the lock key, each lock has a counter key holding the last token
// issued. The acquire script touches both, so in Redis Cluster they must be
// in one hash slot. The counter's name is derived from the lock key:
//
//   - a key with a {hash tag}, such as "{orders}:lock", gets the counter
//     "{orders}:lock:fence", which keeps the tag;
//   - a key with no tag and no '}', such as "orders", gets "{orders}:fence",
//     whose tag is the whole key, which is what Cluster hashes a key without
//     a tag by;
//   - a key with a '}' but no tag (such as "a}b"), which cannot be a tag,
//     gets "{a%7Db#<n>}:fence", with the first n that puts it in the key's
//     slot.
//
// The lock key itself is used as given. The counter is never deleted, not on
// Unlock and not when the lease runs out: tokens must keep growing across
// holders. The cost is one small key per lock name left in Redis for good
// (Redisson's RFencedLock has the same: its issue #6510 reports 25 million of
// them), so lock names should come from a bounded set, not from request ids.
// Deleting a counter restarts its tokens at 1, which a store that has seen
// larger ones rejects (safe, but the resource is stuck until the counter
// passes the old maximum).
//
// # The store
//
// [Store] keeps each resource as a row (id, data, last_token) in SQLite
// through the pure-Go driver modernc.org/sqlite, and writes with one atomic
// statement, the fencing rule:
//
//	UPDATE resources SET data=?, last_token=? WHERE id=? AND last_token < ?
//
// in its upsert form, so that the first write to a row obeys the rule too
// (an absent row has seen no token). Zero rows changed means the token is
// stale: [Store.Write] returns [ErrStaleToken] and the row is unchanged. Equal
// tokens are refused as well, so each token writes a row at most once. The
// database file is in WAL mode with a busy timeout, so several processes can
// share it and the rule still holds between them.
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
