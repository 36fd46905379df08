// Package naive implements the Redis locks that tutorials and production
// code keep getting wrong, one type per mistake. Every type here is
// deliberately unsafe: use package correct instead.
//
// Each type makes exactly one mistake and is otherwise careful, so a lab
// can show that one mistake on its own:
//
//   - [SetNXThenExpire] takes the lock with SETNX and sets its TTL with a
//     second command, EXPIRE. A client that crashes between the two leaves
//     a lock with no TTL: nobody ever gets it again (lab 01).
//   - [GetThenSet] checks the key with GET and, when it is empty, takes it
//     with SET. Two clients can both see it empty and both take it (lab 02).
//   - [BlindDelete] releases with DEL and no owner check. A holder whose
//     lease ran out deletes the next holder's lock (lab 03).
//   - [GetThenDelete] checks the owner with GET, then deletes with DEL, in
//     two commands. Between them the key can expire and change hands, and
//     the DEL removes the new holder's lock (lab 04).
//   - [BlindRenewal] is the "watchdog" from popular tutorials: a goroutine
//     that renews with a plain EXPIRE, without checking the owner, so it
//     renews a lock that now belongs to someone else (lab 05).
//   - [Counted] is a reentrant lock whose scripts count every run: when a
//     reply is lost and go-redis sends the command again, a nested Unlock
//     takes two counts back and frees the outer hold (lab 12).
//
// Each mistake's race window is a named hook point ([HookAfterSetNX],
// [HookAfterGetEmpty], [HookBeforeDel], [HookAfterGetMatch],
// [HookBeforeRenew]) where the labs' step controller parks a client to force
// the bad interleaving every time, instead of hoping for it. Counted's
// window is the network: lab 12 loses a reply for real, in the rig's proxy.
//
// What the types share: a Mutex per holder made by its constructor, a
// random 128-bit token per acquisition, Lock polling TryLock every
// WithPoll interval until the context ends, and the errors [ErrNotObtained],
// [ErrNotHeld] and [ErrInvalid] with the same meaning as in every locklab
// package.
package naive
