package pglock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/locklab/locklab/internal/args"
	"github.com/locklab/locklab/internal/frame"
	"github.com/locklab/locklab/internal/retry"
)

// RowMutex is a row lock on one key: SELECT ... FOR UPDATE on the key's
// row, in a transaction held open until Unlock commits it. Work done
// through [RowMutex.Tx] commits with the release, or not at all. It is not
// reentrant: a second Lock of a held RowMutex waits, in a transaction of
// its own, until the lock is unlocked.
//
// A RowMutex must be made by [NewRow]; the zero value is not usable (its
// methods return an error wrapping [ErrInvalid]). A RowMutex must not be
// copied after first use. Its methods are safe for concurrent use.
type RowMutex struct {
	c     core
	table string // sanitized identifier
}

// NewRow returns a row lock on key, taking its connections from pool. The
// row lives in the table set by [WithTable] (pglock_rows by default),
// created on first use with the key as its text primary key, name; a
// missing row is inserted by the first Lock. NewRow sends nothing to
// PostgreSQL, and never fails: if pool is nil, key is empty or an option is
// invalid, every method reports it with an error wrapping [ErrInvalid].
func NewRow(pool Pool, key string, opts ...Option) *RowMutex {
	o, err := newOptions(opts)
	if err == nil {
		err = target(pool, key)
	}
	return &RowMutex{c: newCore("pglock-row", pool, key, o, err), table: pgx.Identifier{o.table}.Sanitize()}
}

// Lock begins a transaction (READ COMMITTED) and locks the key's row in
// it, waiting in the row's lock queue while another transaction holds it.
// It returns nil once the row is locked; errors.Join(ErrNotObtained,
// ctx.Err()) when ctx ended first; and a wrapped error if PostgreSQL
// cannot be reached or answers with an error (or a pooler in statement
// pooling refuses the transaction). Only ctx bounds the wait: the
// session's statement_timeout and lock_timeout do not apply to it. When
// Lock fails after its statement was sent, it closes that connection, so
// the server rolls the transaction back.
func (m *RowMutex) Lock(ctx context.Context) error {
	if err := m.check(); err != nil {
		return err
	}
	start := time.Now()
	_, err := m.acquire(ctx, inLine)
	m.c.f.Attempted(start, err == nil, err)
	return err
}

// TryLock makes one attempt, with FOR UPDATE NOWAIT: (true, nil) if it
// locked the row, (false, nil), its transaction rolled back, if another
// transaction holds it. Errors are as for [RowMutex.Lock].
func (m *RowMutex) TryLock(ctx context.Context) (bool, error) {
	if err := m.check(); err != nil {
		return false, err
	}
	start := time.Now()
	ok, err := m.acquire(ctx, once)
	m.c.f.Attempted(start, ok, err)
	return ok, err
}

// acquire makes one attempt at the row lock on a connection of its own,
// and keeps the hold if it got the lock.
func (m *RowMutex) acquire(ctx context.Context, how queueing) (bool, error) {
	conn, leave, err := m.c.connect(ctx, how)
	if err != nil {
		return false, err
	}
	defer leave()
	h, err := m.try(ctx, conn, how)
	return m.c.took(ctx, conn, h, err)
}

// try begins the lock's transaction on conn and locks the key's row in
// it, making the row first if it is missing: it returns the hold, or nil,
// the transaction rolled back, when another transaction holds the row
// (TryLock).
func (m *RowMutex) try(ctx context.Context, conn *pgxpool.Conn, how queueing) (*hold, error) {
	ddl := `CREATE TABLE IF NOT EXISTS ` + m.table + ` (name text PRIMARY KEY)`
	if err := ensure(ctx, m.c.pool, conn, ddl); err != nil {
		return nil, err
	}
	nowait := " NOWAIT"
	if how == inLine {
		nowait = ""
	}
	// The token is drawn, and the session's timeouts put back, in the
	// select list above the locking subquery: once the row is locked.
	lock := timeoutsOff + `;
SELECT pg_backend_pid(), ` + drawSQL + `, ` + timeoutsBack + ` FROM (SELECT FROM ` + m.table + ` WHERE name = ` + literal(m.c.key) + ` FOR UPDATE` + nowait + `) AS granted`
	inserted, again := false, false
	for {
		if err := prepare(ctx, m.c.pool, conn, again); err != nil {
			return nil, err
		}
		// READ COMMITTED whatever default_transaction_isolation says: each
		// statement of the holder's work through Tx sees what the holders
		// before it committed. At REPEATABLE READ or SERIALIZABLE the
		// snapshot would be taken when the locking statement starts,
		// before the wait.
		tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
		if err != nil {
			return nil, err
		}
		rows, err := run(ctx, conn, lock)
		switch {
		case err == nil && len(rows) == 1:
			r := rows[0]
			pid, perr := strconv.ParseUint(r[0], 10, 32)
			if perr != nil {
				return nil, fmt.Errorf("pg_backend_pid() = %q: %w", r[0], perr)
			}
			fence, ok, terr := token(r[1], r[2])
			if terr != nil {
				return nil, terr
			}
			if ok {
				return &hold{inTx: true, tx: tx, fence: fence, pid: uint32(pid)}, nil
			}
			if again {
				return nil, errors.New("no epoch for the token after making one (see pglock_epoch)")
			}
			// The server crashed since the epoch was made: give the row
			// back, make the next epoch, and lock it again.
			if err := tx.Rollback(ctx); err != nil {
				return nil, err
			}
			again = true
			continue
		case how == once && lockNotAvailable(err):
			if rerr := tx.Rollback(ctx); rerr != nil {
				return nil, rerr
			}
			return nil, nil
		case err == nil && len(rows) == 0 && !inserted:
			// No row for the key yet: make it, committed at once and
			// outside the lock's transaction (a row inserted inside it
			// would make every other first Lock wait on the insert, NOWAIT
			// or not), then lock it like any other.
			if err := tx.Rollback(ctx); err != nil {
				return nil, err
			}
			// At READ COMMITTED: at REPEATABLE READ or SERIALIZABLE, ON
			// CONFLICT DO NOTHING fails to serialize when another first
			// Lock inserted the row concurrently.
			if _, err := run(ctx, conn, quiet(`INSERT INTO `+m.table+` (name) VALUES (`+literal(m.c.key)+`) ON CONFLICT (name) DO NOTHING`)); err != nil {
				return nil, err
			}
			inserted = true
			continue
		case err == nil:
			err = fmt.Errorf("the lock statement returned %d rows; want 1", len(rows))
		}
		return nil, err
	}
}

// Tx returns the transaction the lock lives in, for the work it protects.
// It runs at READ COMMITTED, whatever default_transaction_isolation says
// (Lock begins it so): each statement sees what was committed before it
// started, the work of every previous holder included. At REPEATABLE READ
// the snapshot would be the one taken when the locking statement began,
// before the wait. Statements through Tx run under the session's
// statement_timeout and lock_timeout. What is done through it commits
// when [RowMutex.Unlock] commits, and is rolled back if the transaction
// ends otherwise (the session was ended by a timeout, the connection
// lost). It returns nil when the RowMutex does not hold the lock. To give
// the work up, roll the transaction back: Unlock then only returns the
// connection, and reports [ErrNotHeld].
func (m *RowMutex) Tx() pgx.Tx {
	if h := m.c.f.Cur.Get(); h != nil {
		return h.tx
	}
	return nil
}

// Unlock commits the lock's transaction, which releases the row and makes
// the work done through [RowMutex.Tx] durable, and returns the connection
// to the pool. It returns an error wrapping [ErrNotHeld] if the lock was
// never acquired, was already released, the transaction had been rolled
// back, or the server ended the session (a timeout such as
// idle_in_transaction_session_timeout: the work was rolled back). It
// ignores ctx's cancellation and bounds the commit by its own timeout of
// 2s. On a transport error the commit may or may not have happened, and
// the error says so; the lock is released either way once the server sees
// the connection close.
func (m *RowMutex) Unlock(ctx context.Context) error {
	if err := m.check(); err != nil {
		return err
	}
	m.c.unlocking.Lock()
	defer m.c.unlocking.Unlock()
	h, err := m.c.releasing(ctx)
	if err != nil {
		return err
	}
	rctx, cancel := retry.Detach(ctx)
	defer cancel()
	was, err := m.release(rctx, h)
	return m.c.released(h, was, err)
}

// release commits h's transaction and reports whether the lock was still
// held: false when the transaction had been rolled back.
func (m *RowMutex) release(ctx context.Context, h *hold) (bool, error) {
	err := h.tx.Commit(ctx)
	switch {
	case errors.Is(err, pgx.ErrTxClosed):
		return false, nil // rolled back through Tx
	case errors.Is(err, pgx.ErrTxCommitRollback):
		return false, nil // the transaction had failed: rolled back
	case err != nil:
		return false, fmt.Errorf("commit (its outcome is unknown): %w", err)
	}
	return true, nil
}

// Fence returns the fencing token of the current hold, drawn once the row
// was locked: larger than the token of every hold granted before it, even
// across a crash of the server (see the package documentation). It
// returns 0 when the RowMutex does not hold the lock.
func (m *RowMutex) Fence() uint64 { return m.c.fence() }

// Key returns the lock's key.
func (m *RowMutex) Key() string { return m.c.key }

// PID returns the server process id of the session that holds the row
// lock (0 when not held).
func (m *RowMutex) PID() uint32 { return m.c.pid() }

// check returns the error every method returns before it sends anything:
// the invalid arguments NewRow found, or that NewRow did not make m.
func (m *RowMutex) check() error {
	if m == nil {
		return args.Invalid(ErrInvalid, frame.NotMade)
	}
	return m.c.f.Check(ErrInvalid)
}
