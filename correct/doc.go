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
package correct
