// Package watchdog implements a Redis lock that renews itself while its
// holder works, and tells the holder, by cancelling a context, the moment
// it can no longer vouch for the lock.
//
// It exists to teach the failure of the fixed lease: a holder whose work
// outlasts the TTL loses the lock silently, and a second holder walks in.
// Renewing in the background fixes the long job, but a watchdog brings
// failures of its own, each seen in other libraries: renewals that go on
// after the lock was lost or released (Redisson #1626, #7272), renewal
// deadlines that drift under CPU load until the lease runs out (rueidis
// #923), and, most often, no signal at all when renewal stops working, so
// the holder carries on without the lock. This package answers each.
//
// # The protocol
//
// Lock is SET key token NX PX ttl with a fresh 128-bit token. While held, a
// refresher goroutine runs extend.lua, which sets PEXPIRE only if the key
// still holds the token, every interval (default ttl/3). Unlock stops the
// refresher, waits for it to exit, and then runs release.lua, which
// deletes the key only if it still holds the token. Neither script can
// touch another holder's key.
//
// # Timing
//
// Each renewal that succeeds was executed by Redis at or after the moment
// it was sent, so the key lives at least until send time + ttl. The
// refresher therefore keeps a local deadline, send time of the last
// successful renewal + ttl − margin, where the margin (ttl/100 + 2ms, as
// redlock-rb uses) covers clocks that run at slightly different rates. The
// next renewal is due at that send time + interval, an absolute time, so a
// late timer or a slow reply delays one renewal and never shifts the ones
// after it. With the default interval of ttl/3 the refresher has two thirds
// of the ttl to get one renewal through.
//
// When the deadline passes with no renewal succeeded (Redis down, the
// network cut, or this process starved or paused), the lock is declared
// lost, even if a renewal is still in flight: a reply that arrives later
// cannot prove the key did not expire in between. Transport errors before
// the deadline are retried every interval/4. A renewal answered 0 means the
// key expired or was taken over; the lock is lost at once.
//
// The watchdog cannot make the lock safe against everything: if this whole
// process stops (SIGSTOP, a long GC pause, a VM migration) for longer than
// the ttl, the key expires and another client may take it while the holder
// is frozen mid-write, and the holder's context is only cancelled when it
// runs again. Use fencing tokens where that matters.
//
// # Signals
//
// [Mutex.Context] is derived from the ctx given to Lock and is cancelled
// when the hold ends; [Mutex.Done] is its Done channel. context.Cause says
// why: [ErrReleased] (Unlock), an error wrapping [ErrNotHeld] (lost; it also
// wraps the last transport error when renewals kept failing), [ErrMaxHold]
// (the [WithMaxHold] cap), or the Lock context's own cause. When the Lock
// context ends, or the cap is reached, the refresher releases the lock
// (best effort, bounded by 5s) so that it does not keep others out for a
// ttl.
//
// # Goroutines
//
// Each hold runs one refresher goroutine, from the acquire until the hold
// ends; Unlock and [Lease.Stop] wait for it to exit. After loss it exits as
// soon as any in-flight renewal returns, which the deadline bounds; after
// its Lock context ends it exits once the release returns. Two timers
// (time.AfterFunc) watch the deadline and the cap; they run only for an
// instant when they fire.
//
// # Reuse
//
// The renewal engine works for any lock with an owner-checked extend:
// [Keep] takes an [Extender] and returns a [Lease] with the same schedule
// and signals. A reentrant.Mutex is such an Extender; see the Keep example.
// So is correct's Mutex, which with a Notifier also waits without polling
// (its waiters queue, and Unlock hands the lock to the oldest), where this
// package's Mutex retries with backoff: correct with a Notifier, kept by
// Keep, is a renewed lock that is fair under contention (the bench's
// correct+keep; see the Keep hand-off example). As correct's Mutex reports
// its validity (Until), Keep starts its lease from there, with no round
// trip of its own.
package watchdog
