// Package zklock implements ZooKeeper's lock recipe on go-zookeeper: a
// lock that never has two holders at once as ZooKeeper sees it, survives
// the loss of a minority of the ensemble, ends by itself when its
// holder's session ends (no lease to renew, no watchdog), and hands every
// holder a fencing token: the zxid of the transaction that created its
// claim.
//
// It exists to test the claims "分布式锁完全指南：从 SETNX 到 Redisson"
// makes for ZooKeeper against Redis: that an ephemeral node replaces the
// watchdog, and that the zxid is a fencing token for free. Both hold, with
// the caveat every lease has: a holder that stops for longer than its
// session timeout (a GC pause, SIGSTOP, a partition) loses the lock while
// it is away and learns it only when it runs again. The resource must
// check the token (labs 09 and 13).
//
// # Using it
//
// Make one [Session] per process with [Connect] and a [Mutex] per lock
// with [New]; Lock, work while [Mutex.Done] is open, hand [Mutex.Fence]
// to the resource, Unlock. Paths are absolute ZooKeeper paths of at most
// 4 KiB: a request over the server's jute.maxbuffer (1 MiB) makes it drop
// the connection under every lock of the Session, so New refuses longer
// ones (ErrInvalid). A Lock that failed may simply be called again: it
// returns when its ctx ends, even with the connection gone (at most 2s
// later, the bound of the delete of its child while the connection is
// alive), and leaves no claim others would queue behind (its child is
// deleted at once, or in the background, whatever session it landed on,
// until the Session is closed). Unlock always asks the server: nil once its child is deleted,
// [ErrNotHeld] once the server says it is gone.
//
// # The protocol
//
// To lock path p, the Mutex creates an ephemeral, sequential child
// p/lock-<random token>-<sequence>, then lists p's children: the smallest
// sequence holds the lock. A waiter watches the child just ahead of its
// own, so a release wakes one waiter and waiters are served in order. A
// create whose reply is lost may have landed: the Mutex finds its child by
// the token in its name (ZooKeeper's "protected" create) and sends the
// create again only if it is not there. A delete whose reply is lost is
// sent again once the connection is back, and Unlock still says nil.
//
// # The lost-lock signal and its margin
//
// Let T be the session timeout the server granted. [Mutex.Done] closes at
// the first of: go-zookeeper losing the connection, the session expiring,
// and no answer to any request sent in the last 2T/3 (the Session dates
// each answer by when its request was sent). The server expires a session
// no sooner than T after it last heard from the client, which is after
// that send: so Done closes at least T/3 before another client can hold
// the lock, whatever the latency. Measured with 800 ms of latency, then a
// partition, 20 of 20 trials each: each way with T = 8s, at least 2.77s
// ahead; on the replies only with T = 3s, at least 1.10s ahead (on
// go-zookeeper's own timer, which starts when an answer arrives, 0.29s).
// Under a round trip longer than T/3 Done may close while the session
// lives: it errs early.
// A Lock returns only on a connection that is alive with its child's
// session, and a hold's Done speaks of the connection since its grant; a
// blip closes the Done of holds granted before it, though their children
// survive if the client reconnects within T. A paused process sees Done
// only when it runs again.
//
// # The token
//
// The zxid is the leader's epoch (high 32 bits, grown by every election)
// and a counter. It grows strictly across leader changes and restarts of
// servers with their data. It goes back when every server is restored
// from an older copy of its data directory: the copy carries the epoch it
// was taken at, so the next election makes the epoch that followed the
// backup again, and its tokens are handed out again, smaller first (on a
// standalone server the counter resumes from the copy). Before restarting
// a restored ensemble, write the largest epoch it used (the high 32 bits
// of the largest token the resource saw) into currentEpoch and
// acceptedEpoch in each server's dataDir/version-2: the election then
// makes a larger one. A standalone server has no such remedy. Both are
// checked by TestTokenAfterRestore.
package zklock
