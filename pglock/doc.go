// Package pglock implements locks held by PostgreSQL itself: a row lock
// taken by SELECT ... FOR UPDATE in a transaction ([RowMutex]) and an
// advisory lock ([Mutex]), each with a fencing token; and the two checks
// that "分布式锁完全指南：从 SETNX 到 Redisson" puts behind a Redis lock for
// high-value work, its "double guarantee": an optimistic version column
// ([Versioned]) and a unique constraint ([Once]).
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
//     ([Mutex.Fence]) checked by the resource, as any lease does. A live
//     holder must also keep its session busy, or lose the lock: a
//     heartbeat, the watchdog again.
//
// Neither lock has a lost-lock signal (no Done): PostgreSQL tells a
// session that it lost its locks only when the session next sends a
// statement. A RowMutex holder learns it at its next statement through
// Tx, which fails, and its work is rolled back; a Mutex holder learns it
// only from Unlock's [ErrNotHeld], so what it protects must check the
// token.
//
// # The locks
//
// A [RowMutex] on key k makes sure a row for k exists in its table
// (pglock_rows unless [WithTable]), then begins a transaction, always at
// READ COMMITTED, on a connection of its own and runs SELECT ... FOR
// UPDATE on that row. PostgreSQL queues the waiters in the row's lock
// queue; the holder keeps the row locked until Unlock commits. Do the
// protected work through [RowMutex.Tx], so that it commits with the
// release or not at all; each of its statements sees every earlier
// holder's committed work, whatever default_transaction_isolation says.
//
// A [Mutex] on key k runs pg_advisory_lock(hashtextextended(k, 0)) on a
// connection of its own, held until Unlock runs pg_advisory_unlock on the
// same connection or the session ends (behind a pooler, see below).
//
// Tokens: both draw theirs from the sequence pglock_fence in the
// statement that is granted the lock, after the grant, so each is larger
// than the token of every hold granted before it. A sequence can go back
// after a crash (values not yet flushed to the WAL are handed out again),
// so a token also carries the server's crash epoch, (epoch-1)·2^40 + n,
// and every token drawn after a crash is larger than every one before it.
// On a fresh database tokens are 1, 2, 3... (token.go has the argument).
//
// # Waits and timeouts
//
// Lock waits until it holds the lock or its context ends: it turns the
// session's statement_timeout and lock_timeout off for the lock statement
// (SET LOCAL in its transaction), so they never end a wait with SQLSTATE
// 57014 or 55P03. A RowMutex puts them back once the row is locked: the
// holder's statements through Tx run under them.
//
// A lock statement whose reply is lost, or whose context ends mid-wait,
// may or may not have been granted: Lock then closes the connection it
// was sent on, which ends the session on the server and with it any lock
// the statement took (at once when the server can see the connection
// close; after a partition, when it notices: the settings above, or TCP
// keepalive). A COMMIT whose reply is lost may have committed; either way
// the row lock is gone once the transaction ends.
//
// # Connections
//
// Every hold takes a connection from the caller's pgxpool.Pool and returns
// it at Unlock (or destroys it when its state is unknown): size the pool
// for the locks held at once plus the application's own queries. A Lock
// also waits on a connection of its own; so that waiters never take the
// connections the holders' own statements need, the Locks of one process
// that wait on one *pgxpool.Pool take at most half its connections
// (MaxConns/2, at least one) and further Locks wait in the process, in
// line, for a turn.
//
// # Poolers
//
// Through PgBouncer (and poolers like it), both locks work in session and
// in transaction pooling, and both refuse statement pooling.
//
//   - Transaction pooling hands a client's server session to other
//     clients between its transactions. A session advisory lock taken
//     outside a transaction would stay on a server session that others
//     then use: their pg_advisory_lock succeeds on it re-entrantly (two
//     holders), and the holder's Unlock may run on another session and
//     leave the lock held. A Mutex therefore finds out, once per
//     connection, whether its server session is its own: the process id
//     PostgreSQL sent the connection at startup (pgconn.PgConn.PID) must
//     be pg_backend_pid(). A pooler that moves clients between sessions
//     cannot send that id, and PgBouncer sends one of its own in every
//     pool mode. When they differ, the Mutex holds its lock in a
//     transaction left open until Unlock (pg_advisory_xact_lock): a
//     pooler keeps an open transaction on one server session, and closes
//     that server connection if the client goes away. The hold then ends
//     by idle_in_transaction_session_timeout, not idle_session_timeout.
//     A RowMutex lives in a transaction anyway.
//   - Session pooling keeps one server session per client connection:
//     both locks work as on a direct connection (the Mutex, seeing
//     PgBouncer's own process id, holds its lock in a transaction too).
//   - Statement pooling refuses the open transaction each lock needs:
//     Lock and TryLock return an error that says so, and nothing is held.
//
// pglock sends each of its statements as a simple query, with no prepared
// statement for a pooler to lose. The statements the application sends
// through [RowMutex.Tx] are its own: behind PgBouncer 1.18 in
// transaction pooling, pgx's default statement cache fails with
// "prepared statement ... does not exist" once a statement lands on
// another server session; use QueryExecModeExec or the simple protocol
// there, as for any statement sent through that pooler.
package pglock
