// Package pglock implements locks held by PostgreSQL itself: a row lock
// taken by SELECT ... FOR UPDATE in a transaction ([RowMutex]) and an
// advisory lock ([Mutex]), each with a fencing token; and two checks to
// put behind any lock for high-value work: an optimistic version column
// ([Versioned]) and a unique constraint ([Once]).
//
// A database lock has no lease: nothing expires while the holder's
// session lives, so the lock is never granted twice, whatever pauses or
// delays. The other side of that: a holder that freezes keeps everyone
// waiting, and one cut off by the network keeps its lock until the server
// notices its session is gone. What ends such a hold is a server setting,
// and each turns the lock back into a lease:
//
//   - idle_in_transaction_session_timeout ends a session whose transaction
//     sat idle that long, and rolls it back. For a [RowMutex] whose holder
//     works through [RowMutex.Tx] that is also the fence: the frozen
//     holder's writes were in the rolled-back transaction and its next
//     statement fails, so no stale write can commit.
//   - idle_session_timeout frees a [Mutex]'s advisory lock when the
//     session sits idle, but the holder's writes elsewhere were never part
//     of the lock: a frozen holder that wakes up writes anyway, so the
//     resource must check the token ([Mutex.Fence]). A live holder must
//     then keep its session busy, or lose the lock.
//
// Neither lock has a lost-lock signal: PostgreSQL tells a session that it
// lost its locks only when the session next sends a statement. A RowMutex
// holder learns it at its next statement through Tx; a Mutex holder only
// from Unlock's [ErrNotHeld].
//
// # Using it
//
// Do the protected work through [RowMutex.Tx], so that it commits with the
// release (Unlock commits) or not at all:
//
//	m := pglock.NewRow(pool, "order:1001") // pool is a *pgxpool.Pool
//	if err := m.Lock(ctx); err != nil {
//		return err
//	}
//	_, err := m.Tx().Exec(ctx, "UPDATE orders SET status = 'paid' WHERE id = 1001")
//	...
//	return m.Unlock(ctx) // COMMIT
//
// A RowMutex locks a row per key in its table (pglock_rows unless
// [WithTable]), always at READ COMMITTED, so each statement through Tx sees
// every earlier holder's committed work. A [Mutex] holds pg_advisory_lock
// on a hash of the key until Unlock or the end of its session. Tokens are
// drawn from the sequence pglock_fence after the grant, so each is larger
// than that of every hold granted before it, across server crashes too
// (a token carries the server's crash epoch).
//
// # Waits, lost replies and connections
//
// Lock waits until it holds the lock or its context ends, whatever
// statement_timeout and lock_timeout say (Tx's statements run under them). A lock statement whose reply is lost, or whose context ends
// mid-wait, may have been granted: Lock then closes its connection, which
// ends the session on the server and with it any lock it took (after a
// partition, once the server notices: the settings above, or TCP
// keepalive). A COMMIT whose reply is lost may have committed; either way
// the row lock is gone once the transaction ends.
//
// Every hold takes a connection from the pool until Unlock: size the pool
// for the locks held at once, the application's own queries, and one
// more. One process's waiting Locks then take at most half the pool and
// leave its holds a connection; further Locks wait in the process.
//
// # Poolers
//
// Through PgBouncer and poolers like it, both locks work in session and in
// transaction pooling, and both refuse statement pooling (Lock returns an
// error that says so). A session advisory lock would stay on a server
// session that the pooler hands to others, so a Mutex checks, once per
// connection, that its server session is its own (the process id sent at
// startup is pg_backend_pid(); PgBouncer's never is). When it is not, the
// Mutex holds its lock in a transaction left open until Unlock
// (pg_advisory_xact_lock), which a pooler keeps on one server session; the
// hold then ends by idle_in_transaction_session_timeout. pglock sends no
// prepared statements; for the application's own through Tx, behind
// PgBouncer in transaction pooling, use QueryExecModeExec or the simple
// protocol, as for any statement sent through it.
//
// The locklab lab labs/14-database shows a frozen holder blocking
// everyone, and the settings that end its hold.
package pglock
