// Package etcdlock implements a lock on etcd that never has two holders at
// once as etcd sees it, survives the loss of a minority of etcd's members,
// and hands every holder a fencing token that grows from holder to holder
// (within the cluster's history: a restore from backup sets it back, see
// Tokens): the etcd revision at which its claim was written.
//
// etcd (Raft) commits every write on a majority before it answers, so a
// failover or a restarted member never forgets a lock, and nothing depends
// on clocks agreeing. But the lock is still a lease: a holder that stops
// for longer than its TTL (a GC pause, SIGSTOP, a partition) loses it while
// it is away and learns so only when it runs again. Work while [Mutex.Done]
// is open, and have the resource check the token ([Mutex.Fence]), or, for
// data kept in etcd itself, guard each write with [Mutex.IsOwner] in the
// same transaction:
//
//	m := etcdlock.New(client, "/lock/order/1001")
//	if err := m.Lock(ctx); err != nil {
//		return err
//	}
//	defer m.Unlock(context.Background())
//	err := store.Write(ctx, data, m.Fence()) // refused if a later holder wrote
//
// # How it works
//
// To lock key k, the Mutex writes a claim of its own, k/<lease>-<random
// token>, on a lease; the oldest claim under k/ holds the lock. A waiter
// watches only the claim just ahead of its own, so waiters are served in
// order and a release wakes one of them. Unlike etcd's concurrency.Mutex,
// every Lock writes a claim with a fresh token, so two Mutexes on one
// session do not both hold the lock, and Unlock deletes the claim only if
// it is still the one it made, so a release sent again after a lost reply
// cannot delete a newer claim.
//
// A claim sent again after a lost reply finds itself and reads the same
// revision. A Lock that fails after its claim may have been written
// withdraws it before returning, so a caller that gives up leaves no claim
// that others would queue behind, even when its request reaches etcd late.
// On a shared session that withdraw leaves a small tombstone key on the
// session's lease until the session ends. [Mutex.Unlock] releases even when
// its context has ended, within its own 2s.
//
// # Leases and the lost-lock signal
//
// By default each hold has a lease of its own ([WithTTL], default 10s),
// granted by Lock, renewed every TTL/3 and revoked by Unlock.
// [WithSession] puts every claim on one session's lease instead, as a
// process would for all its locks: fewer writes, and the session's end
// ends every lock on it (Lock then returns [ErrSessionLost] until a new
// session is made).
//
// [Mutex.Done] closes when the hold can no longer promise that etcd still
// has the lease: etcd said it ended, the session ended, or no renewal was
// answered in time. It counts from when the last answered renewal was
// sent, less a tenth of the TTL, so it closes before etcd can end the lease
// and before any other client can get the lock, however slow the replies.
// It errs early: a renewal round trip longer than about 0.45 TTL closes it
// while etcd keeps the lease. Lock never returns a hold whose Done has
// already closed. A paused holder sees Done only when it runs again, which
// is why Done is a hint to stop work, and the fencing token is the
// guarantee.
//
// # Tokens
//
// Within one cluster's history a later holder always has a larger token
// than an earlier one, across failovers, member restarts and killed
// leaders. That history ends when the cluster is restored from a backup
// (etcdctl snapshot restore, or a copied data directory): the revision
// goes back to the backup's, and new holders get tokens that earlier
// holders already had. Restore with etcdutl snapshot restore
// --bump-revision N --mark-compacted (etcd 3.5.10 and later), N above the
// writes since the backup; on an older etcd, raise the revision with
// writes (each Put adds one) past the highest token the resources have
// seen before clients return, or reset those resources.
//
// The locklab lab labs/13-consensus runs this lock against a paused
// holder, a partition and a failover.
package etcdlock
