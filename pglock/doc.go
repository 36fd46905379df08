// Package pglock implements locks held by PostgreSQL itself: a row lock
// taken by SELECT ... FOR UPDATE in a transaction ([RowMutex]) and a
// session-level advisory lock ([Mutex]), each with a fencing token; and the
// two checks that "分布式锁完全指南：从 SETNX 到 Redisson" puts behind a
// Redis lock for high-value work, its "double guarantee": an optimistic
// version column ([Versioned]) and a unique constraint ([Once]).
//
// It exists to show the last rows of the chapter's decision matrix for
// real. A database lock has no lease: nothing expires while the holder
// lives, so nothing is granted twice, but a holder that freezes keeps
// everyone waiting, and one cut off by the network keeps its lock until
// the server notices the session is gone. What ends such a hold is a
// server setting, and each turns the lock back into a lease:
//
//   - idle_in_transaction_session_timeout ends a session whose transaction
//     sat idle that long, and rolls the transaction back. For a
//     [RowMutex] whose holder does its work in [RowMutex.Tx], that is
//     also the fence: the frozen holder's writes were in the rolled-back
//     transaction, and its next statement fails. No stale write can
//     commit.
//   - idle_session_timeout ends an idle session outside a transaction,
//     which frees a [Mutex]'s advisory lock; but the holder's writes
//     elsewhere were never part of the lock, and a frozen holder that
//     wakes up writes anyway, so an advisory lock needs the fencing token
//     ([Mutex.Fence], from a sequence) checked by the resource, as any
//     lease does. A live holder must also keep its session busy, or lose
//     the lock: a heartbeat, the watchdog again.
//
// # The locks
//
// A [RowMutex] on key k makes sure a row for k exists in its table
// (pglock_rows unless [WithTable]), then begins a transaction on a
// connection of its own and runs SELECT ... FOR UPDATE on that row.
// PostgreSQL queues the waiters in the row's lock queue; the holder keeps
// the row locked until Unlock commits (or the transaction ends otherwise).
// Its fencing token is the transaction's id (pg_current_xact_id, 64 bits,
// never reused). Do the protected work through [RowMutex.Tx], so that it
// commits with the release or not at all.
//
// A [Mutex] on key k runs pg_advisory_lock(hashtextextended(k, 0)) on a
// connection of its own, held until Unlock runs pg_advisory_unlock on the
// same connection or the session ends. Its fencing token is the next value
// of the sequence pglock_fence, drawn in the same statement right after
// the lock is granted: sequences never go back, even across a crash.
//
// # Lost replies and give-ups
//
// A lock statement whose reply is lost, or whose context ends mid-wait,
// may or may not have been granted. The Mutex then closes the connection
// it was sent on, which ends the session on the server and with it any
// lock the statement took (at once when the server can see the
// connection close; after a partition, when it notices: the settings
// above, or TCP keepalive). A COMMIT whose reply is lost may have
// committed; either way the row lock is gone once the transaction ends.
//
// # Connections
//
// Every hold takes a connection from the caller's pgxpool.Pool and returns
// it at Unlock (or destroys it when its state is unknown): size the pool
// for the locks held at once plus the application's own queries.
package pglock
