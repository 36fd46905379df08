package pglock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/locklab/locklab/internal/args"
	"github.com/locklab/locklab/internal/frame"
	"github.com/locklab/locklab/internal/retry"
)

// Mutex is a session-level advisory lock on one key: held by the
// connection that took it until Unlock, or until that session ends. Behind
// a pooler that may share its server session (see Poolers in the package
// documentation) it is a transaction-level advisory lock instead, in a
// transaction left open until Unlock. It is not reentrant: a second Lock
// of a held Mutex waits, on a connection of its own, until the lock is
// unlocked.
//
// A Mutex must be made by [New]; the zero value is not usable (its methods
// return an error wrapping [ErrInvalid]). A Mutex must not be copied after
// first use. Its methods are safe for concurrent use.
type Mutex struct{ c core }

// New returns an advisory lock on key, taking its connections from pool.
// It sends nothing to PostgreSQL. New never fails: if pool is nil or key
// is empty, every method of the returned Mutex reports it with an error
// wrapping [ErrInvalid]. Keys are hashed to PostgreSQL's 64-bit lock space
// (hashtextextended); two keys that collide share a lock, which can only
// make the lock stricter.
func New(pool Pool, key string, opts ...Option) *Mutex {
	o, err := newOptions(opts)
	if err == nil {
		err = target(pool, key)
	}
	return &Mutex{c: newCore("pglock", pool, key, o, err)}
}

// The lock statements, for key k (a quoted literal) and a session of the
// caller's alone, or one a pooler may share (then the lock is a
// transaction-level advisory lock, in a transaction left open until
// Unlock). Each runs in a transaction whose timeouts are off until the
// grant, and draws the token after the grant: the outer select list is
// evaluated for the row the subquery returns once the lock is granted
// (the subquery holds a volatile function, so the planner does not pull
// it up).
func (m *Mutex) lockSQL(how queueing, shared bool) string {
	k := "hashtextextended(" + literal(m.c.key) + ", 0)"
	var fn string
	switch {
	case how == inLine && !shared:
		fn = "pg_advisory_lock"
	case how == inLine:
		fn = "pg_advisory_xact_lock"
	case !shared:
		fn = "pg_try_advisory_lock"
	default:
		fn = "pg_try_advisory_xact_lock"
	}
	var sel string
	if how == inLine {
		sel = `SELECT true, pg_backend_pid(), ` + drawSQL + ` FROM (SELECT ` + fn + `(` + k + `)) AS granted`
	} else {
		// The token is drawn only when the lock was free.
		sel = `SELECT got, pg_backend_pid(), CASE WHEN got THEN (SELECT max(epoch) FROM pglock_epoch) END, CASE WHEN got THEN nextval('` + fenceSequence + `') END FROM (SELECT ` + fn + `(` + k + `) AS got) AS attempt`
	}
	q := "BEGIN ISOLATION LEVEL READ COMMITTED;\n" + timeoutsOff + ";\n" + sel
	if !shared {
		q += ";\nCOMMIT" // a session lock outlives the transaction
	}
	return q
}

func (m *Mutex) unlockSQL() string {
	return `SELECT pg_advisory_unlock(hashtextextended(` + literal(m.c.key) + `, 0))`
}

// Lock acquires the lock, waiting in the server while another session
// holds it. It returns nil once the lock is held;
// errors.Join(ErrNotObtained, ctx.Err()) when ctx ended first; and a
// wrapped error if PostgreSQL cannot be reached or answers with an error
// (or a pooler in statement pooling refuses the transaction it needs: see
// the package documentation on poolers). Only ctx bounds the wait: the
// session's statement_timeout and lock_timeout do not apply to it. When
// Lock fails after its statement was sent, it closes that connection, so
// a lock granted just as it gave up dies with the session.
func (m *Mutex) Lock(ctx context.Context) error {
	if err := m.check(); err != nil {
		return err
	}
	start := time.Now()
	_, err := m.acquire(ctx, inLine)
	m.c.f.Attempted(start, err == nil, err)
	return err
}

// TryLock makes one attempt: (true, nil) if it got the lock, (false, nil)
// if another session holds it. Errors are as for [Mutex.Lock].
func (m *Mutex) TryLock(ctx context.Context) (bool, error) {
	if err := m.check(); err != nil {
		return false, err
	}
	start := time.Now()
	ok, err := m.acquire(ctx, once)
	m.c.f.Attempted(start, ok, err)
	return ok, err
}

// acquire makes one attempt at the lock on a connection of its own, and
// keeps the hold if it got the lock.
func (m *Mutex) acquire(ctx context.Context, how queueing) (bool, error) {
	conn, leave, err := m.c.connect(ctx, how)
	if err != nil {
		return false, err
	}
	defer leave()
	h, err := m.try(ctx, conn, how)
	return m.c.took(ctx, conn, h, err)
}

// try runs the lock statement on conn: it returns the hold, or nil when
// another session holds the lock (TryLock).
func (m *Mutex) try(ctx context.Context, conn *pgxpool.Conn, how queueing) (*hold, error) {
	shared, err := sessionShared(ctx, conn)
	if err != nil {
		return nil, err
	}
	for again := false; ; again = true {
		if err := prepare(ctx, m.c.pool, conn, again); err != nil {
			return nil, err
		}
		rows, err := run(ctx, conn, m.lockSQL(how, shared))
		if err != nil {
			return nil, err
		}
		if len(rows) != 1 || len(rows[0]) != 4 {
			return nil, fmt.Errorf("the lock statement returned %d rows; want 1", len(rows))
		}
		r := rows[0]
		if r[0] != "t" {
			if shared {
				_, err = run(ctx, conn, "ROLLBACK")
			}
			return nil, err
		}
		pid, err := strconv.ParseUint(r[1], 10, 32)
		if err != nil {
			return nil, fmt.Errorf("pg_backend_pid() = %q: %w", r[1], err)
		}
		fence, ok, err := token(r[2], r[3])
		if err != nil {
			return nil, err
		}
		if ok {
			return &hold{inTx: shared, fence: fence, pid: uint32(pid)}, nil
		}
		if again {
			return nil, errors.New("no epoch for the token after making one (see pglock_epoch)")
		}
		// The server crashed since the epoch was made: give the lock
		// back, make the next epoch, and take it again.
		undo := "ROLLBACK"
		if !shared {
			undo = m.unlockSQL()
		}
		if _, err := run(ctx, conn, undo); err != nil {
			return nil, err
		}
	}
}

// Unlock releases the lock on the connection that holds it, and returns
// the connection to the pool. It returns [ErrNotHeld] if the lock was
// never acquired, was already released, or the server ended its session
// (which released it). Behind a pooler it commits the lock's transaction.
// It ignores ctx's cancellation and bounds the release by its own timeout
// of 2s. On a transport error it closes the connection (the server
// releases the lock when it notices the session gone) and returns the
// error; the Mutex no longer holds the lock either way.
func (m *Mutex) Unlock(ctx context.Context) error {
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

// release ends h's lock on its connection and reports whether it was
// still held.
func (m *Mutex) release(ctx context.Context, h *hold) (bool, error) {
	if h.inTx {
		// The lock lives in the transaction: COMMIT ends both. A
		// transaction that had failed answers ROLLBACK, and held the lock
		// until then.
		tag, err := h.conn.Conn().PgConn().Exec(ctx, "COMMIT").ReadAll()
		if err != nil {
			return false, err
		}
		return len(tag) == 1 && tag[0].CommandTag.String() == "COMMIT", nil
	}
	rows, err := run(ctx, h.conn, m.unlockSQL())
	if err != nil {
		return false, err
	}
	return len(rows) == 1 && rows[0][0] == "t", nil
}

// Fence returns the fencing token of the current hold, drawn from the
// sequence pglock_fence right after the lock was granted: larger than
// every token drawn before it, even across a crash of the server (see the
// package documentation). It returns 0 when the Mutex does not hold the
// lock.
func (m *Mutex) Fence() uint64 { return m.c.fence() }

// Key returns the lock's key.
func (m *Mutex) Key() string { return m.c.key }

// PID returns the server process id of the session that holds the lock (0
// when not held): what pg_locks and pg_stat_activity show, and what an
// administrator would pg_terminate_backend.
func (m *Mutex) PID() uint32 { return m.c.pid() }

// check returns the error every method returns before it sends anything:
// the invalid arguments New found, or that New did not make m.
func (m *Mutex) check() error {
	if m == nil {
		return args.Invalid(ErrInvalid, frame.NotMade)
	}
	return m.c.f.Check(ErrInvalid)
}
