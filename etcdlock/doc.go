// Package etcdlock implements a lock on etcd that never has two holders at
// once as etcd sees it, survives the loss of a minority of etcd's members,
// and hands every holder a fencing token that grows from holder to holder
// (within the cluster's history: a restore from backup sets it back, see
// Tokens): the etcd revision at which its claim was written.
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
// A holder's liveness is a lease. To lock key k, the Mutex writes its own
// claim, k/<lease in hex>-<random token>, attached to the lease, in a
// transaction that also reads the oldest claim in line (the first by
// create revision among the keys from k/ up to k/~):
//
//	Txn If(CreateRevision(claim) == 0, Version(tombstone) == 0)
//	    Then(Put(claim, lease), Get(line, first created))
//	    Else(Get(claim), Get(line, first created))
//
// The claim with the smallest create revision holds the lock. A waiter
// watches only the newest claim older than its own and waits for its
// deletion (a release, a revoked or expired lease), so waiters are served
// in order and a release wakes one of them; a watch that resumes after a
// reconnect at a revision etcd has compacted reads the line again and
// keeps its place. The create revision of the claim is the fencing token
// ([Mutex.Fence]): etcd's revision counts every write to the whole key
// space and is committed by a majority; see Tokens below for what that
// guarantees. Guard writes kept in etcd itself with [Mutex.IsOwner] in the
// same transaction.
//
// Why not concurrency.Mutex as it is: its claim is k/<lease>, shared by
// every Mutex on one session, so two of them on one key both "hold" it;
// and its Unlock deletes the claim by name, so a release retried after a
// lost reply can delete a newer claim of the same session (etcd issue
// 22082). Here every Lock writes a claim with a fresh random token, and
// Unlock deletes it only if its create revision is still the held one.
//
// # Lost replies, late requests and give-ups
//
// The claim's name is fixed before the transaction is sent, so sending it
// again (a retry after a lost reply) finds the claim already there and
// reads it: the same claim, the same revision. When Lock fails after the
// claim may have been written (a transport error, ctx ending), it
// withdraws the claim before returning, on a context of its own (2s), so
// a caller that gives up leaves no claim that others would queue behind,
// even if its claim transaction is still in the network and reaches etcd
// later (a partition holds it past gRPC's give-up, about 11s): a hold's
// own lease is revoked, so a late claim fails; on a shared session the
// withdraw also writes the claim's tombstone, k/~<lease>-<token>, on the
// session's lease, and a late claim finds it and writes nothing. Such a
// tombstone stays until the session ends (release.go, withdraw). If etcd
// cannot be reached for the withdraw, a claim on a hold's own lease ends
// with the lease, and one on a shared session is withdrawn in the
// background, every second until done or the session ends.
//
// Unlock's answer is decided by a transaction that deletes the claim only
// if its create revision is the held one; clientv3 never sends a
// transaction twice, so the answer is true. The Revoke of a hold's own
// lease follows, and its "not found" is ignored: clientv3 sends a Revoke
// again when its reply is lost.
//
// # Leases and the lost-lock signal
//
// By default each hold has a lease of its own ([WithTTL], 10s as in the
// chapter's example), granted by Lock and revoked by Unlock: Lock costs
// two Raft writes (grant, claim), Unlock two (delete, revoke), a TryLock
// that finds the lock taken three (grant, claim, revoke).
// [WithSession] shares one session among many Mutexes, as a process would
// (one lease for all its locks): one write for Lock (after one renewal of
// the session's lease) and one for Unlock, and the session's end ends
// every lock on it.
//
// Each hold renews its lease itself, every TTL/3 (with [WithSession], in
// addition to the session's own renewals), and [Mutex.Done] is closed
// when the hold can no longer promise that etcd still has the lease:
// etcd said it ended or was revoked, the session given with [WithSession]
// ended, or no renewal answered in time. The deadline counts from when the
// last answered renewal was sent, not from when its answer arrived (etcd
// counts from when the renewal reached it), less a margin of a tenth of
// the TTL (1s of the default 10s): Done closes at least that long before
// etcd can end the lease, so before any other client can get the lock,
// however slow the replies (measured: with 800ms replies and a 5s TTL, in
// 20 of 20 trials, about 1.7s before; TestDoneBeforeOtherHolder). A
// renewal's round trip of more than about 0.45 TTL closes Done although
// etcd keeps the lease. Lock never returns a hold whose Done has already
// closed: it fails with [ErrSessionLost] instead. A paused holder learns
// of the loss only when it runs again, which is why Done is a hint to stop
// work, and the fencing token is the guarantee.
//
// # Tokens
//
// Within one etcd cluster's history a later holder of a lock always has a
// larger token than an earlier one, across failovers, member restarts
// and killed leaders: a claim is created at etcd's current revision, which
// only grows and is committed by a majority before anyone sees it. That
// history ends when the cluster is restored from a backup (etcdctl
// snapshot restore, or a copy of a data directory): the revision goes
// back to the backup's, and new holders get tokens that earlier holders
// already had (22 before the restore, 4 after, in
// TestTokenAfterRestoreGoesBack). etcdutl snapshot restore --bump-revision
// N --mark-compacted (etcd 3.5.10 and later) raises the restored revision
// by N: with N above the number of writes since the backup, tokens keep
// growing. The etcd 3.4.23 that Debian ships cannot do that (its etcdctl
// snapshot restore has no such option; check yours with --help); there,
// before clients return, raise the revision with writes (each Put adds
// one) past the highest token the fenced resources have seen, or reset
// those resources.
package etcdlock
