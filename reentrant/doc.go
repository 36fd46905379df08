// Package reentrant implements a counted, reentrant Redis lock: the owner
// that holds it may lock it again without waiting, each Lock is matched by
// one Unlock, and the key is deleted only when the count returns to zero.
// No other owner can take, release or extend it meanwhile.
//
// It exists to teach what reentrancy costs and what it needs: an owner
// identity (owner.go says why Go's own sync.Mutex refuses reentrancy). Redisson keys its reentrant RLock by "<client uuid>:<thread
// id>"; Go has no thread ids, so here the owner is explicit. A lock that is
// re-entered after it silently expired starts a new hold with count 1, and
// the outer holder's Unlock then fails with [ErrNotHeld]: the count in
// Redis, not the call stack, is the truth.
//
// # When reentrancy is still wanted
//
// Within one program, restructure the code. Across services the call
// graph is not yours to restructure: processOrder locks order:1001, then
// calls reserveStock (perhaps in another service, through an RPC), which
// must also lock order:1001 because it is called from other places too.
// Without reentrancy reserveStock waits for a lock its own caller holds
// until the lease runs out. With a shared owner the nested Lock is a
// re-entry, and the lock is freed when the outermost Unlock runs.
//
// # How the owner is carried
//
// The owner is an [Owner] value, 128 random bits from [NewOwner], put in
// the context with [WithOwner]; every method reads it from its ctx and
// returns an error wrapping [ErrInvalid] when there is none. Pass the id
// on to other services (a header, a message field) and rebuild it there
// with Owner(id). A per-Mutex default owner would be simpler to call, but
// it would make every goroutine sharing the Mutex the same owner, so they
// would all "re-enter" one another's lock: no mutual exclusion at all. The
// explicit owner makes the caller say who it is.
//
// # The protocol
//
// The key is a hash with one field, owner id → count (Redisson's layout).
// acquire.lua increments the owner's count when the key is missing or the
// owner's field exists, and lengthens the TTL (never shortens it: an inner
// Lock with a shorter TTL must not cut an outer hold); otherwise it changes
// nothing. release.lua refuses an owner that has no field, decrements
// otherwise, lengthens the TTL while the count is above 0, and deletes the
// key at 0. extend.lua renews the TTL
// only for the owner, which makes a [Mutex] a watchdog.Extender: pass it
// to watchdog.Keep, with the context carrying the owner, to renew it while
// the outermost holder works.
//
// # Timing
//
// A hold lasts at most the TTL after the last Lock, Unlock or Extend of
// its owner. Nested calls renew it, but a long step with no lock call in
// between does not: keep the TTL longer than the longest such step, or
// renew the lock with package watchdog.
//
// # Faults
//
// What the fault scoreboard (make faults) measures it against. It survives
// a lost reply sent again (every call has an id and leaves a receipt, so a
// Lock or Unlock sent twice counts once), a command delivered late (a Lock
// that gave up cancels its call by id), a killed holder (a hold lasts at
// most the TTL after its owner's last call), and eviction (Lock refuses a
// server that evicts). It does not survive, as no lease lock does: a
// holder paused past its TTL, a write delayed in the network past the TTL,
// a failover before the key replicates, a restart without data, and a
// clock jump on the server (see package correct, and package fencing for
// the cure to the first two).
//
// # Metrics
//
// [WithObserver] reports only the outermost hold of an Owner: Acquired
// when its count goes from 0 to 1 and Released when it returns from 1 to
// 0. Re-entries and partial Unlocks are invisible to other owners, so they
// are invisible to the wait and hold metrics too.
package reentrant
