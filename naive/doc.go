// Package naive implements the Redis locks that tutorials and production
// code keep getting wrong, one type per mistake. Every type here is
// deliberately unsafe: use package correct instead.
//
// Each type makes exactly one mistake and is otherwise careful, so that
// one mistake can be seen on its own, in a test or a demonstration:
//
//   - [SetNXThenExpire] takes the lock with SETNX and sets its TTL with a
//     second command, EXPIRE. A client that crashes between the two, or
//     whose SETNX reply is lost and sent again, leaves a lock with no TTL:
//     nobody ever gets it again.
//   - [GetThenSet] checks the key with GET and, when it is empty, takes it
//     with SET. Two clients can both see it empty and both take it.
//   - [BlindDelete] releases with DEL and no owner check. A holder whose
//     lease ran out deletes the next holder's lock.
//   - [GetThenDelete] checks the owner with GET, then deletes with DEL, in
//     two commands. Between them the key can expire and change hands, and
//     the DEL removes the new holder's lock.
//   - [BlindRenewal] is the "watchdog" of popular tutorials: a goroutine
//     that renews with a plain EXPIRE, without checking the owner, so it
//     renews a lock that now belongs to someone else.
//   - [Counted] is a reentrant lock whose scripts count every run: when a
//     reply is lost and go-redis sends the command again, a nested Unlock
//     takes two counts back and frees the outer hold.
//
// Each mistake's race window is a named hook point ([HookAfterSetNX],
// [HookAfterGetEmpty], [HookBeforeDel], [HookAfterGetMatch],
// [HookBeforeRenew]), called through [WithHook]: a test can park a client
// there and force the bad interleaving every time, instead of hoping for
// it. Counted's window is the network: a reply lost for real.
//
// What the types share: a lock per holder made by its constructor, a
// random 128-bit token per acquisition, Lock polling TryLock every
// [WithPoll] interval until the context ends, and the errors
// [ErrNotObtained], [ErrNotHeld] and [ErrInvalid] with the same meaning as
// in every locklab lock package. The locklab labs 01 to 05 and 12 break
// each of them against a real server, and show the fix.
package naive
