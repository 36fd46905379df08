// Package zklock implements ZooKeeper's lock recipe: a lock that never has
// two holders at once as ZooKeeper sees it, survives the loss of a
// minority of the ensemble, ends by itself when its holder's session ends
// (no lease to renew, no watchdog), and hands every holder a fencing token
// that only grows: the zxid of the transaction that created its claim.
//
// It exists to test the claims "分布式锁完全指南：从 SETNX 到 Redisson"
// makes for ZooKeeper against Redis: that an ephemeral node replaces the
// watchdog (the session's heartbeats keep it, the session's end deletes
// it), and that the zxid is a fencing token for free. Both hold, with the
// caveat every lease has: a holder that stops for longer than its session
// timeout (a GC pause, SIGSTOP, a partition) loses the lock while it is
// away and learns it only when it runs again. The resource must check the
// token (labs 09 and 13).
//
// # The protocol
//
// To lock path p, the Mutex creates an ephemeral, sequential child
// p/lock-<random token>-<sequence> (ZooKeeper appends the sequence, a
// counter of p's children), then lists p's children. The child with the
// smallest sequence holds the lock. A waiter sets a watch on the child just
// ahead of its own and waits for its deletion (a release, or the end of
// its session), then lists again: waiters are served in order, and a
// release wakes one of them. The holder reads its child's czxid, the zxid
// of the create, which ZooKeeper's atomic broadcast (Zab) orders across
// the whole ensemble and every leader change: [Mutex.Fence]. (The sequence
// number would serve too, but it restarts if the parent node is deleted
// and made again.) Guard writes kept in ZooKeeper itself with
// [Mutex.IsOwner] in a multi-op.
//
// # Lost replies and give-ups
//
// A create whose reply is lost (the connection dropped) may have created
// the child. Its name carries a token made before it was sent, so the
// Mutex lists p's children and adopts the one with its token, and sending
// the create again is never needed (ZooKeeper's "protected" create). The
// go-zookeeper client takes no context; when Lock's ctx ends mid-call, Lock
// returns at once and the call finishes in the background (within the
// session's receive timeout). Whenever Lock fails after its child may have
// been created, the Mutex deletes it, retrying in the background until it
// is gone or the session ends, since an ephemeral child of a live session
// would otherwise stay at the head of the line for good.
//
// # Sessions and the lost-lock signal
//
// A [Session] is one ZooKeeper session (one connection, heartbeats every
// third of the timeout), shared by every Mutex of a process. The client
// declares the connection lost after two thirds of the session timeout
// without a reply; the server expires the session, deleting its children,
// once the timeout has passed without a heartbeat. [Mutex.Done] closes at
// the first of these: the connection lost (Curator calls this SUSPENDED:
// from then on the holder cannot vouch for the lock, though the child
// survives if the client reconnects in time) or the session expired.
package zklock
