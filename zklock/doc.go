// Package zklock implements ZooKeeper's lock recipe on go-zookeeper: a
// lock that never has two holders at once as ZooKeeper sees it, survives
// the loss of a minority of the ensemble, ends by itself when its
// holder's session ends (no lease to renew, no watchdog), and hands every
// holder a fencing token: the zxid of the transaction that created its
// claim.
//
// The session is still a lease: a holder that stops for longer than its
// session timeout (a GC pause, SIGSTOP, a partition) loses the lock while
// it is away and learns so only when it runs again. Work while
// [Mutex.Done] is open, and have the resource check the token.
//
// # Using it
//
// Make one [Session] per process with [Connect] and a [Mutex] per lock
// with [New]; Lock, work while Done is open, hand [Mutex.Fence] to the
// resource (or guard a write kept in ZooKeeper with [Mutex.IsOwner]),
// Unlock:
//
//	session, err := zklock.Connect(servers, 10*time.Second)
//	...
//	defer session.Close() // ends the session: releases every lock on it
//	m := zklock.New(session, "/locks/order-1001")
//	if err := m.Lock(ctx); err != nil {
//		return err
//	}
//	defer m.Unlock(context.Background())
//	err = store.Write(ctx, data, m.Fence()) // refused if a later holder wrote
//
// Paths are absolute ZooKeeper paths of at most 4 KiB (New refuses longer
// ones with [ErrInvalid]: a request over the server's jute.maxbuffer would
// drop the connection under every lock of the Session). A Lock that failed
// may simply be called again: it returns when its ctx ends, even with the
// connection gone (at most 2s later), and leaves no claim others would
// queue behind. Unlock always asks the server: nil once its claim is
// deleted, [ErrNotHeld] once the server says it is gone. An Unlock that
// fails on a transport error leaves the delete to the Session, which sends
// it until ZooKeeper answers, so the lock is freed then, not when the
// session ends.
//
// # How it works
//
// To lock path p, the Mutex creates an ephemeral, sequential child
// p/lock-<random token>-<sequence>; the smallest sequence holds the lock.
// A waiter watches the child just ahead of its own, so a release wakes one
// waiter and waiters are served in order. A create whose reply is lost
// may have landed: the Mutex finds its child by the token in its name and
// creates it again only if it is not there. A delete whose reply is lost
// is sent again once the connection is back.
//
// # The lost-lock signal
//
// Let T be the session timeout the server granted. [Mutex.Done] closes at
// the first of: the connection lost, the session expired, and no answer to
// any request sent in the last 2T/3. The server expires a session no
// sooner than T after it last heard from the client, so Done closes at
// least T/3 before another client can hold the lock, whatever the latency.
// It errs early: under a round trip longer than T/3 it may close while the
// session lives, and a connection blip closes the Done of holds granted
// before it, though their claims survive if the client reconnects within
// T. A Lock returns only on a live connection of the claim's session.
//
// # The token
//
// The zxid is the leader's epoch (high 32 bits, grown by every election)
// and a counter. It grows strictly across leader changes and restarts of
// servers with their data. It goes back when every server is restored from
// an older copy of its data directory: the next election makes again the
// epoch that followed the backup, and hands out its tokens again. Before
// restarting a restored ensemble, write the largest epoch it used (the
// high 32 bits of the largest token the resource saw) into currentEpoch and
// acceptedEpoch in each server's dataDir/version-2: the election then makes
// a larger one. A standalone server has no such remedy (its counter
// resumes from the copy).
//
// The locklab lab labs/13-consensus runs this lock against a paused
// holder, a partition and a failover.
package zklock
