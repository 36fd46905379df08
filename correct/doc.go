// Package correct implements a lock on a single Redis primary that gives
// mutual exclusion as long as each holder finishes within the lock's TTL,
// and that releases and extends a lock only while its owner still holds it.
//
// It is the reference the other lock packages build on, and it exists to
// show three classic mistakes fixed (package naive makes each one on
// purpose):
//
//   - SETNX then EXPIRE. Two commands: a client that dies between them
//     leaves a key that never expires, and nobody gets the lock again.
//     Here acquiring is one command, SET key token NX PX ttl.
//   - A blind DEL. A holder whose lock expired deletes the key, which by
//     then may be the next holder's lock. Here every acquisition writes a
//     fresh 128-bit random token, and only the holder of that token can
//     delete or extend the key.
//   - GET then DEL. Checking the token from the client still leaves a gap
//     in which the key can expire and be taken before the DEL arrives.
//     Here the compare and the delete (or PEXPIRE) run as one Lua script,
//     and Redis runs a script to the end before serving anyone else.
//
// What it does not protect against, by design:
//
//   - A holder that runs past the TTL: a GC or SIGSTOP pause, a slow disk,
//     a stalled VM. The key expires, another client acquires it, and both
//     work at once; the late holder finds out only at its next Unlock or
//     Extend ([ErrNotHeld]), after the damage. [Mutex.Extend] and package
//     watchdog shrink the window by renewing the lease while the work runs;
//     only fencing tokens (package fencing) let the protected resource
//     refuse the late writer.
//   - Failover. Redis replicates asynchronously, so a primary can
//     acknowledge the SET and die before its replica has the key; the
//     promoted replica grants the lock again. A primary that restarts
//     without persistence forgets the key the same way. See package redlock
//     and lab 07.
//
// # Timing
//
// Safety rests on one inequality: the holder must be done before the key
// expires in Redis. The holder cannot see Redis's clock, so [Mutex.Until]
// gives it a local bound that errs on the safe side. Let s be the local
// time just before the SET is sent, and e the time Redis executes it. The
// request has to travel and wait its turn, so e >= s, and Redis keeps the
// key until e + ttl >= s + ttl. Until therefore returns s + ttl: while
// time.Now() is before Until, the key has not expired (if nothing else
// touched it). Measuring from the reply instead would credit the holder
// with the request's travel and queueing time, which under load or a
// network stall can be seconds, and the estimate would err late, the
// dangerous way. [Mutex.Extend] moves Until by the same rule, from just
// before the script is sent.
//
// The argument assumes that the two clocks run at the same rate. Until is
// read from Go's monotonic clock, but Redis expires keys by its wall clock,
// so a clock stepped forward on the server ends the lock early; package
// redlock subtracts a drift allowance for this. Keep the TTL several times
// longer than the work, and check time.Until(m.Until()) before each step
// that must not run unprotected.
//
// # Unlocking
//
// [Mutex.Unlock] releases the lock even when its context has been
// cancelled: it keeps the context's values but not its cancellation, and
// bounds the release with its own timeout (2s). A deferred Unlock at the
// end of a request therefore releases the lock instead of leaving it held
// for a whole TTL. For the same reason, when [Mutex.Lock] or
// [Mutex.TryLock] fails after sending its SET, it deletes the key if the
// SET did land, so a failed Lock leaves no lock behind.
//
// # Waiting
//
// How a Lock waits for a held lock decides its latency, its fairness and
// the load it puts on Redis; it never decides safety, which rests on SET NX
// and the owner-checked scripts alone. There are two strategies.
//
// Polling, the default: try SET NX, sleep a jittered, growing delay
// ([WithRetry]), try again. Every failed try costs a command, and between
// a release and the next try the lock sits free, unused. Nobody is in line:
// the client that just released usually takes the lock straight back
// (barging), so under steady contention some waiters wait many times
// longer than others.
//
// Hand-off, with a [Notifier] ([WithNotifier]): waiters queue, first come
// first served, and the holder gives the lock to the oldest one.
//
//   - Lock tries SET NX while the lock looks free (two round trips per
//     uncontended Lock and Unlock, as polling). When it is taken, the waiter
//     joins a Redis list with one RPUSH (the token carries the id of the
//     waiter's Notifier) and sleeps. A Mutex that just handed the lock over
//     queues at once next time, skipping the SET NX that would fail.
//   - Unlock is one script: pop the oldest waiter; SET the key to its token
//     with a fresh TTL, checking that the value it replaces is ours; PUBLISH
//     to the waiter's Notifier channel. The waiter wakes already holding
//     the lock: one hop after the release, with no idle gap and no race
//     between waiters. Five commands in all per contended acquisition
//     (RPUSH; EVALSHA, LPOP, SET ... GET, PUBLISH), however many wait.
//   - The owner check costs no read within the lease: before Until the key
//     cannot have expired, so SET ... GET both hands over and returns the
//     value to check (a mismatch, possible only if something outside the
//     protocol deleted or overwrote the key, is undone in the same script).
//     A late Unlock, after Until, reads the key first and changes nothing
//     unless it is still ours, so it can never touch the next holder's
//     lock or its TTL.
//
// Its failure modes, and what bounds each:
//
//   - The lost wake-up: a waiter refused by SET NX joins the queue just
//     after the holder released with nobody queued, so no message will
//     come. The waiter that finds itself first in the queue checks the
//     lock once more right away ([HookRefused] marks the window).
//   - A dead waiter: its process is gone, so nobody is subscribed to its
//     channel and PUBLISH reports 0 receivers. The release script moves on
//     to the next waiter in the same script; the lock is never handed to
//     the dead.
//   - A frozen waiter (SIGSTOP, a long GC pause) still has its
//     subscription, so it is handed the lock and keeps it, without using
//     it, until it resumes or the TTL runs out.
//   - A dead holder: nobody releases. The key expires after its TTL, and
//     every waiter also checks the lock itself every ttl/4, so one of them
//     takes it within ttl/4 of the expiry (breaking the queue order once)
//     and hands it on in order from then on.
//   - A lost message, or a Notifier whose connection was down when its
//     waiter's turn came (it looked dead and was skipped): the same
//     periodic check finds the lock already handed over, or puts the
//     waiter back in the queue.
//   - A waiter that gives up (its ctx ends) leaves the queue; if the lock
//     was handed to it at that moment, it hands the lock on.
//
// After a hand-off, [Mutex.Until] counts the lease from the last moment
// the waiter knows came before the hand-off (when it queued, or its last
// check), so it errs early, never late. Hand-off needs Pub/Sub on the
// server that holds the key: a single primary, alone or behind Sentinel.
// On Redis Cluster use polling (see [Notifier]). Keys: the queue of lock
// "k" is "{k}:q", in the same cluster slot as the lock.
package correct
