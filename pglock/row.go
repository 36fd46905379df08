package pglock

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
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
	o, errs := newOptions(opts)
	return &RowMutex{c: newCore("pglock-row", pool, key, o, errs), table: pgx.Identifier{o.table}.Sanitize()}
}

// Lock begins a transaction and locks the key's row in it, waiting in the
// row's lock queue while another transaction holds it. It returns nil once
// the row is locked; errors.Join(ErrNotObtained, ctx.Err()) when ctx ended
// first; and a wrapped error if PostgreSQL cannot be reached or answers
// with an error. When Lock fails after its statement was sent, it closes
// that connection, so the server rolls the transaction back.
func (m *RowMutex) Lock(ctx context.Context) error {
	_, err := m.c.lock(ctx, true, m.try)
	return err
}

// TryLock makes one attempt, with FOR UPDATE NOWAIT: (true, nil) if it
// locked the row, (false, nil), its transaction rolled back, if another
// transaction holds it. Errors are as for [RowMutex.Lock].
func (m *RowMutex) TryLock(ctx context.Context) (bool, error) {
	return m.c.lock(ctx, false, m.try)
}

func (m *RowMutex) try(ctx context.Context, conn *pgxpool.Conn, wait bool) (*hold, bool, error) {
	ddl := `CREATE TABLE IF NOT EXISTS ` + m.table + ` (name text PRIMARY KEY)`
	if err := ensure(ctx, m.c.pool, conn, ddl); err != nil {
		return nil, false, err
	}
	nowait := " NOWAIT"
	if wait {
		nowait = ""
	}
	lock := `SELECT pg_current_xact_id()::text FROM ` + m.table + ` WHERE name = $1 FOR UPDATE` + nowait
	for attempt := 0; ; attempt++ {
		tx, err := conn.Begin(ctx)
		if err != nil {
			return nil, false, err
		}
		var xid string
		err = tx.QueryRow(ctx, lock, m.c.key).Scan(&xid)
		switch {
		case err == nil:
			fence, perr := strconv.ParseUint(xid, 10, 64)
			if perr != nil {
				return nil, false, fmt.Errorf("pg_current_xact_id() = %q: %w", xid, perr)
			}
			return &hold{tx: tx, fence: fence}, true, nil
		case !wait && lockNotAvailable(err):
			if rerr := tx.Rollback(ctx); rerr != nil {
				return nil, false, rerr
			}
			return nil, false, nil
		case errors.Is(err, pgx.ErrNoRows) && attempt == 0:
			// No row for the key yet: make it, committed at once and
			// outside the lock's transaction (a row inserted inside it
			// would make every other first Lock wait on the insert, NOWAIT
			// or not), then lock it like any other.
			if err := tx.Rollback(ctx); err != nil {
				return nil, false, err
			}
			if _, err := conn.Exec(ctx, `INSERT INTO `+m.table+` (name) VALUES ($1) ON CONFLICT (name) DO NOTHING`, m.c.key); err != nil {
				return nil, false, err
			}
			continue
		}
		return nil, false, err
	}
}

// Tx returns the transaction the lock lives in, for the work it protects:
// what is done through it commits when [RowMutex.Unlock] commits, and is
// rolled back if the transaction ends otherwise (the session was ended by
// a timeout, the connection lost). It returns nil when the RowMutex does
// not hold the lock. To give the work up, roll the transaction back:
// Unlock then only returns the connection, and reports [ErrNotHeld].
func (m *RowMutex) Tx() pgx.Tx {
	if h := m.c.base.Cur.Get(); h != nil {
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
	return m.c.unlock(ctx, func(ctx context.Context, h *hold) (bool, error) {
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
	})
}

// Fence returns the fencing token of the current hold: the id of its
// transaction (pg_current_xact_id), larger than that of every transaction
// that began before it, and never reused. It returns 0 when the RowMutex
// does not hold the lock.
func (m *RowMutex) Fence() uint64 { return m.c.fence() }

// Key returns the lock's key.
func (m *RowMutex) Key() string { return m.c.key }

// PID returns the server process id of the session that holds the row
// lock (0 when not held).
func (m *RowMutex) PID() uint32 { return m.c.pid() }
