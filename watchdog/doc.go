// Package watchdog implements a Redis lock that renews itself while its
// holder works, and tells the holder, by cancelling a context, the moment
// it can no longer vouch for the lock.
//
// Use it for work whose length you cannot bound in advance: a fixed lease
// is lost silently when the work outlasts it, and a second holder walks
// in. Do the work under [Mutex.Context], so that it stops when the lock is
// lost instead of carrying on without it:
//
//	m := watchdog.New(client, "lock:report", watchdog.WithTTL(10*time.Second))
//	if err := m.Lock(ctx); err != nil {
//		return err
//	}
//	defer m.Unlock(context.Background())
//	err := build(m.Context()) // cancelled if the lock is lost
//
// [Keep] renews, in the same way, a lock taken with another package: any
// [Extender], such as package correct's or package reentrant's Mutex.
//
// # How renewal works
//
// Lock takes the key with SET NX PX and a fresh 128-bit token, in a
// script (internal/take's take.lua) that also refuses a token already
// released: a take held up in the network that lands after its Lock gave
// up takes nothing. While the lock is held, a goroutine extends it, only
// if the key still holds the token, every interval ([WithInterval],
// default ttl/3). Renewals are due at fixed times counted from the last
// one that succeeded, so a late timer or a slow reply delays one renewal
// and never shifts the ones after it.
// The holder's deadline is the send time of the last successful renewal
// plus the TTL, less a margin of ttl/100 + 2ms for clocks that run at
// slightly different rates: a renewal's effect cannot start before it was
// sent. When the deadline passes with no renewal through (Redis down, the
// network cut, this process starved), the lock is declared lost, even with
// a renewal still in flight. A renewal refused because the key expired or
// changed hands ends the hold at once. Unlock stops the goroutine, waits
// for it to exit, then deletes the key if it still holds the token.
//
// # Signals
//
// [Mutex.Context] is derived from the ctx given to Lock and is cancelled
// when the hold ends; [Mutex.Done] is its Done channel. context.Cause says
// why: [ErrReleased] (Unlock), an error wrapping [ErrNotHeld] (lost; it
// also wraps the last transport error when renewals kept failing),
// [ErrMaxHold] (the [WithMaxHold] cap), or the Lock context's own cause.
// When the Lock context ends or the cap is reached, the lock is released
// (best effort) so that it does not keep others out for a TTL.
//
// # What it survives, and what it does not
//
// It survives a reply lost and the command sent again (neither script can
// touch another holder's key, and each answers a second run as the
// first), a command delivered late, a holder that crashes (its short lease
// dies with the process), and a server that may evict keys (Lock refuses
// it, [ErrEviction]; [WithEvictionCheck]).
//
// It does not survive:
//   - the whole process paused past the TTL (SIGSTOP, a long GC pause, a
//     VM migration): the key expires and another client may take it while
//     the holder is frozen mid-write; its context is cancelled only when
//     it runs again;
//   - a write held up in the network past the TTL: the holder is told when
//     its deadline passes, but a write already sent still lands;
//   - a failover before the key reached the replica, or a restart without
//     persistence: either forgets the key;
//   - the server's clock jumping forward, which ends the key early.
//
// Where those matter, have the resource check fencing tokens (package
// fencing).
//
// The locklab lab labs/05-lease-too-short shows a fixed lease lost under
// long work, and this package's renewal keeping it.
package watchdog
