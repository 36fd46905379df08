// Package reentrant implements a counted, reentrant Redis lock: the owner
// that holds it may lock it again without waiting, each Lock is matched by
// one Unlock, and the key is deleted only when the count returns to zero.
// No other owner can take, release or extend it meanwhile.
//
// Prefer restructuring the code when the nested calls are all yours, as
// Go's own sync.Mutex asks (a recursive lock lets a function run while its
// caller has the invariants broken; owner.go has the argument). Use this
// package when they are not: processOrder locks order:1001, then
// calls reserveStock (perhaps in another service), which also locks
// order:1001 because other callers use it too. Without reentrancy
// reserveStock would wait for a lock its own caller holds until the lease
// runs out; with a shared owner the nested Lock is a re-entry, and the
// lock is freed when the outermost Unlock runs.
//
// # The owner
//
// Reentrancy needs to know who is calling, and Go has no thread ids, so
// the owner is explicit: an [Owner], 128 random bits from [NewOwner], put
// in the context with [WithOwner]. Every method reads it from its ctx and
// returns an error wrapping [ErrInvalid] when there is none. Make one per
// call path (a request, a job), pass its id on to other services (a
// header, a message field) and rebuild it there with Owner(id). Two call
// paths must never share an Owner: they would both hold the lock at once.
//
//	m := reentrant.New(client, "lock:order:1001")
//	ctx = reentrant.WithOwner(ctx, reentrant.NewOwner())
//	if err := m.Lock(ctx); err != nil {
//		return err
//	}
//	defer m.Unlock(ctx)
//	reserveStock(ctx, m) // its m.Lock(ctx) re-enters
//
// # Timing
//
// A hold lasts at most the TTL after the last Lock, Unlock or Extend of
// its owner. Nested calls renew it (never shortening it), but a long step
// with no lock call in between does not: keep the TTL longer than the
// longest such step, or renew the lock with package watchdog (a Mutex is
// a watchdog.Extender; pass it to watchdog.Keep with the owner's context).
// A lock that expired and is then re-entered starts a new hold with count
// 1, and the outer holder's Unlock then fails with [ErrNotHeld]: the count
// in Redis, not the call stack, is the truth.
//
// # What it survives, and what it does not
//
// It survives a reply lost and the command sent again (every call has an
// id and leaves a receipt, so a Lock or Unlock sent twice counts once), a
// command delivered late (a Lock that gave up cancels its call by id), a
// holder that crashes (its hold ends a TTL after its last call), and a
// server that may evict keys (Lock refuses it, [ErrEviction];
// [WithEvictionCheck]).
//
// As any lease lock, it does not survive a holder paused past its TTL or a
// write held up in the network past it (another owner takes the lock
// meanwhile; package fencing lets the resource refuse the late write), a
// failover before the key reached the replica or a restart without
// persistence (either forgets the key), or the server's clock jumping
// forward (the key expires early).
//
// # Observers
//
// [WithObserver] reports only the outermost hold of an Owner: Acquired
// when its count goes from 0 to 1 and Released when it returns from 1 to
// 0. Re-entries and partial Unlocks are invisible to other owners, so
// they are invisible to the wait and hold metrics too.
//
// In Redis the key is a hash with one field, the owner's id → its count,
// as Redisson's RLock keeps it.
//
// The locklab lab labs/06-reentrancy shows a nested Lock that waits for
// its own caller, and a hurried fix that frees the lock too early.
package reentrant
