// Package correct implements a lock on a single Redis primary that gives
// mutual exclusion as long as each holder finishes within the lock's TTL,
// and that releases and extends a lock only while its owner still holds it.
//
// It is the reference the other lock packages build on, and it fixes the
// classic mistakes that package naive makes on purpose: SETNX then EXPIRE
// (acquiring is one command, SET key token NX PX ttl), a blind DEL and
// GET then DEL (every acquisition writes a fresh 128-bit token, and only
// its holder can delete or extend the key, in one Lua script), and a
// script that breaks when the client sends it twice (go-redis does, on its
// default options, when a reply is lost: every command here gives the same
// answer the second time, see the .lua headers).
//
// # Timing
//
// Safety rests on one inequality: the holder must be done before the key
// expires in Redis. [Mutex.Until] gives the holder a local bound that errs
// on the safe side: the time just before the SET was sent, plus the TTL
// (Redis ran the SET no earlier, so it keeps the key no shorter). Lock
// returns the lock only with at least half of that lease left to run: an
// answer that comes later is given back and Lock tries again, so a link
// whose round trip takes half the TTL never gets the lock. Keep the
// TTL several times longer than the work, check time.Until(m.Until())
// before each step that must not run unprotected, and renew long work with
// [Mutex.Extend] or package watchdog. Until is read from Go's monotonic
// clock, while Redis expires keys by its wall clock: a server clock stepped
// forward ends the lock early (package redlock allows for drift).
//
// # Faults
//
// What the fault scoreboard (make faults) measures it against, in the
// scoreboard's words. It survives a lost reply sent again, a command
// delivered late, a killed holder (its key expires after the TTL), and
// eviction (Lock refuses a server that evicts). It does not survive, by
// design: a holder paused past its TTL or a write delayed in the network
// past the TTL (the late holder finds out only at its next Unlock or
// Extend, [ErrNotHeld], after the damage; fencing tokens, package fencing,
// let the resource refuse it), a failover before the key replicates or a
// restart without data (either forgets the key; package redlock, lab 07),
// and a clock jump on the server (it ends the lock early).
//
// # The environment
//
// Eviction deletes lock keys under memory pressure (maxmemory with any
// policy but noeviction): Lock refuses such a server unless told otherwise
// ([WithEvictionCheck]). A user that may SET but not run scripts could take
// a lock it cannot release: Lock checks the scripts run first. The ACL a
// lock user needs: SET, EVALSHA, EVAL and the scripts' GET, DEL, LPOP, LREM,
// LPOS, RPUSH, SET, PEXPIRE, PTTL, PUBLISH; keys key, "<base>:q" and
// "<base>:r:*" (see [New]); with a Notifier, SUBSCRIBE to "correct:w:*".
//
// # Unlocking and waiting
//
// [Mutex.Unlock] releases the lock even when its context has been
// cancelled (a deferred Unlock at the end of a cancelled request still
// frees the lock), bounded by its own 2s timeout; a Lock that fails after
// its SET may have landed deletes the key the same way. Lock polls by
// default ([WithRetry]); with a [Notifier] ([WithNotifier]) waiters queue
// and the holder hands the lock to the oldest live one, FIFO, one hop after
// the release (queue.go describes the protocol and its failure modes).
//
// # Auto-pipelined clients
//
// go-redis's *redis.AutoPipeliner (client.AutoPipeline(), on a Client or
// a ClusterClient) batches concurrent goroutines' commands into pipelines,
// and every promise above holds on it: the contract suite runs over it.
// Two of its ways are answered here. It does not honour a queued
// command's context, so the Mutex sends its commands through the same
// client's deferred face (AsyncAutoPipeline, the same batching engine,
// whose replies can be awaited with a context) and waits for each only
// until the context ends (Lock returns by its deadline, plus the 2s bound
// of the clean-up of a SET left unanswered; Unlock's release is bounded by
// its own 2s), and the command left running is handled as a lost reply is. And a batch that fails on a network error is sent again whole, so
// every command may run twice: each script answers the second run as the
// first (the .lua headers). Only an AutoPipeliner configured with
// Unordered: true is refused (its methods return an error wrapping
// [ErrInvalid]): there a release may overtake the SET it follows, and a
// Lock that gave up could leave its key for a whole TTL. A [Notifier]
// subscribes through the AutoPipeliner's own client.
//
// Redis 7.0 or later is required (SET with both NX and GET).
package correct
