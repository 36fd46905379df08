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
// Lock is SET key token NX PX ttl GET with a fresh 128-bit token. While
// held, a refresher goroutine runs extend.lua, which sets PEXPIRE only if
// the key still holds the token, every interval (default ttl/3). Unlock
// stops the refresher, waits for it to exit, and then runs release.lua,
// which deletes the key only if it still holds the token.
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
// # Faults
//
// What the fault scoreboard (make faults) measures it against. It survives
// a lost reply sent again and a command delivered late (neither script can
// touch another holder's key, and each gives the same answer run twice), a
// killed holder (its short lease dies with the process), and eviction
// (Lock refuses a server that evicts). It does not survive: a holder
// paused past its TTL (if this whole process stops, SIGSTOP, a long GC
// pause, a VM migration, for longer than the ttl, the key expires and
// another client may take it while the holder is frozen mid-write; the
// holder's context is cancelled only when it runs again), a write delayed
// in the network past the TTL (the holder is told when its deadline
// passes, but a write already sent still lands), a failover before the key
// replicates or a restart without data (either forgets the key), and a
// clock jump on the server. Use fencing tokens where those matter.
//
// # Signals
//
// [Mutex.Context] is derived from the ctx given to Lock and is cancelled
// when the hold ends; [Mutex.Done] is its Done channel. context.Cause says
// why: [ErrReleased] (Unlock), an error wrapping [ErrNotHeld] (lost; it also
// wraps the last transport error when renewals kept failing), [ErrMaxHold]
// (the [WithMaxHold] cap), or the Lock context's own cause. When the Lock
// context ends, or the cap is reached, the refresher releases the lock
// (best effort, bounded by 2s) so that it does not keep others out for a
// ttl.
package watchdog
