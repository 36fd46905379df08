// Package correct implements a lock on a single Redis primary that gives
// mutual exclusion as long as each holder finishes within the lock's TTL,
// and that releases and extends a lock only while its owner still holds it.
//
// Use it where one Redis server (or a primary with replicas) is the lock
// service and an occasional second holder after a failover is tolerable.
// Every acquisition writes a fresh 128-bit random token with one command
// (a script that does SET key token NX PX ttl, and refuses a token
// already released), and only that token's holder can delete or extend
// the key:
//
//	m := correct.New(client, "lock:order:1001", correct.WithTTL(10*time.Second))
//	if err := m.Lock(ctx); err != nil {
//		return err // ErrNotObtained, joined with ctx.Err() when ctx ended the wait
//	}
//	defer m.Unlock(context.Background())
//	// work, finished well before m.Until()
//
// # Timing
//
// Safety rests on one rule: the holder must be done before the key expires
// in Redis. [Mutex.Until] is a bound that errs on the safe side (the
// moment just before the SET was sent, plus the TTL), and Lock returns the
// lock only with at least half of that left: an answer that comes later is
// given back and Lock tries again, so on a link whose round trip is half
// the TTL Lock never succeeds. Keep the TTL several times longer than the
// work, check time.Until(m.Until()) before each step that must not run
// unprotected, and renew long work with [Mutex.Extend] or package watchdog.
//
// # What it survives, and what it does not
//
// It survives a reply lost and the command sent again (go-redis does that
// on its default options; every command here answers a second run as the
// first), a command delivered late (an acquisition landing after its
// Lock gave up takes nothing: the give-up's release marks its token
// released for a TTL), a holder that crashes (its key expires
// after the TTL), and a server that may evict keys (Lock refuses it; see
// below).
//
// It does not survive, by design:
//   - a holder paused past its TTL (a GC pause, SIGSTOP, a VM migration)
//     or a write held up in the network past it: another client takes the
//     lock meanwhile, and the late holder learns it only at its next
//     Unlock or Extend ([ErrNotHeld]). Fencing tokens (package fencing)
//     let the resource refuse such a late write;
//   - a failover before the key reached the replica, or a restart without
//     persistence: either forgets the key and a second client gets the lock
//     (package redlock spreads the lock over independent servers);
//   - the server's clock jumping forward: Redis expires keys by its wall
//     clock, so the lock ends early.
//
// # Environment
//
// Lock refuses a server with maxmemory and any policy but noeviction
// ([ErrEviction]; [WithEvictionCheck] turns the check off) and a user who
// may not run the scripts ([ErrNoScripting]). The ACL a lock user needs:
// EVALSHA and EVAL, and for the scripts GET, DEL, LPOP, LREM, LPOS,
// RPUSH, SET, PEXPIRE, PTTL and PUBLISH, on the key, "<base>:q" and
// "<base>:r:*" (see [New]); with a Notifier, SUBSCRIBE to "correct:w:*".
// Redis 7.0 or later is required.
//
// # Unlocking and waiting
//
// [Mutex.Unlock] releases even when its context is already cancelled, so a
// deferred Unlock at the end of a cancelled request still frees the lock;
// it is bounded by its own 2s timeout. Lock polls by default ([WithRetry]);
// with a [Notifier] ([WithNotifier]) waiters queue and the holder hands
// the lock to the oldest live one, first come first served. On a Redis
// Cluster (a *redis.ClusterClient or its AutoPipeliner) the Mutex works
// and polls; [NewNotifier] refuses a cluster, whose Pub/Sub cannot tell
// the holder which waiters are listening.
//
// # Auto-pipelined clients
//
// A *redis.AutoPipeliner (client.AutoPipeline()) works too, with every
// promise above kept. The Mutex waits for each command only until the
// context ends (Lock returns by its deadline, plus the 2s bound of the
// clean-up of an acquisition left unanswered), and a batch sent again whole after a
// network error is one more command run twice. One configured with
// Unordered: true is refused (an error wrapping [ErrInvalid]): there a
// release could overtake the acquisition it follows. A [Notifier] subscribes
// through the AutoPipeliner's own client.
//
// The locklab lab labs/07-failover shows a failover handing the lock to a
// second client.
package correct
