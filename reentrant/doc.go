// Package reentrant implements a counted, reentrant Redis lock: the owner
// that holds it may lock it again without waiting, each Lock is matched by
// one Unlock, and the key is deleted only when the count returns to zero.
// No other owner can take, release or extend it meanwhile.
//
// It exists to teach what reentrancy costs and what it needs: an owner
// identity. Redisson keys its reentrant RLock by "<client uuid>:<thread
// id>"; Go has no thread ids, so here the owner is explicit. A lock that is
// re-entered after it silently expired starts a new hold with count 1, and
// the outer holder's Unlock then fails with [ErrNotHeld]: the count in
// Redis, not the call stack, is the truth.
//
// # Why sync.Mutex is not reentrant
//
// Go's own mutex refuses reentrancy on purpose. Go's authors (Russ Cox on
// golang-nuts, 2010) argue that a mutex protects invariants: Lock says "I
// need the invariants to hold, and may break them for a while", Unlock
// says "I have restored them". A recursive lock lets a function that
// expects the invariants to hold be called while its caller has them
// broken, and hides the bug instead of deadlocking on it; the fix is to
// split the code into a locking entry point and an unexported function
// that assumes the lock is held. Go also has no goroutine ids, by design
// (the FAQ "Why is there no goroutine ID?"): goroutines are anonymous
// workers, and work moves freely between them, so "the goroutine that
// holds the lock" means nothing. A sync.Mutex "is not associated with a
// particular goroutine", and one goroutine may unlock what another locked.
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
// owner's field exists, and sets the TTL on every acquire, so a re-entry
// renews the lease; otherwise it changes nothing. release.lua refuses an
// owner that has no field, decrements otherwise, renews the TTL while the
// count is above 0, and deletes the key at 0. extend.lua renews the TTL
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
// # Metrics
//
// [WithObserver] reports only the outermost hold of an Owner: Acquired
// when its count goes from 0 to 1 and Released when it returns from 1 to
// 0. Re-entries and partial Unlocks are invisible to other owners, so they
// are invisible to the wait and hold metrics too.
package reentrant
