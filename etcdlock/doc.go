// Package etcdlock implements a lock on etcd that never has two holders at
// once as etcd sees it, survives the loss of a minority of etcd's members,
// and hands every holder a fencing token that only grows: the etcd
// revision at which its claim was written.
//
// It exists to show what consensus buys and what it does not. etcd (Raft)
// commits every write on a majority before it answers, so a failover never
// forgets a lock, as a Redis replica promoted too early does (lab 07), and
// nothing depends on clocks agreeing (lab 08). But the lock is still a
// lease: a holder that stops for longer than its TTL (a GC pause, SIGSTOP,
// a partition) loses it while it is away and does not know until it runs
// again. The resource it writes must check the token (lab 09, lab 13).
// "分布式锁完全指南：从 SETNX 到 Redisson" recommends etcd's
// concurrency.NewMutex as the middle ground between Redis and ZooKeeper;
// this package follows that recipe, with the changes below.
//
// # The protocol
//
// A holder's liveness is a lease, kept alive with clientv3's KeepAlive
// (every TTL/3); not by a concurrency.Session, which ends when the first
// keep-alive goes unanswered for DialTimeout+1s, however long the lease
// (see keep.go). To lock key k, the Mutex writes its own claim,
// k/<lease in hex>-<random token>, attached to the lease, in a transaction
// that also reads the oldest claim under k/ (the first by create revision):
//
//	Txn If(CreateRevision(claim) == 0) Then(Put(claim, lease), Get(k/, first created))
//	                                   Else(Get(claim), Get(k/, first created))
//
// The claim with the smallest create revision holds the lock. A waiter
// watches only the newest claim older than its own and waits for its
// deletion (a release, a revoked or expired lease), so waiters are served
// in order and a release wakes one of them. The create revision of the
// claim is the fencing token ([Mutex.Fence]): etcd's revision counts every
// write to the whole key space, is committed by a majority, and never goes
// back, across failovers too. Guard writes kept in etcd itself with
// [Mutex.IsOwner] in the same transaction.
//
// Why not concurrency.Mutex as it is: its claim is k/<lease>, shared by
// every Mutex on one session, so two of them on one key both "hold" it;
// and its Unlock deletes the claim by name, so a release retried after a
// lost reply can delete a newer claim of the same session (etcd issue
// 22082). Here every Lock writes a claim with a fresh random token, and
// Unlock deletes it only if its create revision is still the held one.
//
// # Lost replies and give-ups
//
// The claim's name is fixed before the transaction is sent, so sending it
// again (a retry after a lost reply) finds the claim already there and
// reads it: the same claim, the same revision. When Lock fails after the
// claim may have been written (a transport error, ctx ending mid-wait),
// it deletes the claim, or revokes its own lease, before returning, on a
// context of its own (2s), so a caller that gives up leaves no claim that
// others would queue behind. If etcd cannot be reached for that, a claim
// on a hold's own lease ends with the lease (its keep-alive has stopped),
// and a claim on a shared session is deleted in the background, retried
// every second until it is gone or the session ends.
//
// # Leases and the lost-lock signal
//
// By default each hold has a lease of its own ([WithTTL], 10s as in the
// chapter's example), granted by Lock and revoked by Unlock: three Raft
// writes per Lock and Unlock. [WithSession] shares one session among many
// Mutexes, as a process would (one lease for all its locks): two writes
// per Lock and Unlock, and the session's end ends every lock on it.
// [Mutex.Done] is closed when the hold's lease is no longer being kept
// alive: it expired, it was revoked, or no keep-alive was answered for a
// TTL. A paused holder learns this only when it runs again, which is
// why Done is a hint to stop work, and the fencing token is the guarantee.
package etcdlock
