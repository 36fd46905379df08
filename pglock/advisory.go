package pglock

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Mutex is a session-level advisory lock on one key: held by the
// connection that took it until Unlock, or until that session ends. It is
// not reentrant: a second Lock of a held Mutex waits, on a connection of
// its own, until the lock is unlocked.
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
	o, errs := newOptions(opts)
	return &Mutex{c: newCore("pglock", pool, key, o, errs)}
}

const (
	// lockSQL takes the lock, waiting in the server, then draws the token.
	// The subquery runs first: it holds a volatile function, so the
	// planner does not pull it up, and nextval runs once per row it
	// returns, after the lock is granted.
	lockSQL = `SELECT nextval('` + fenceSequence + `') FROM (SELECT pg_advisory_lock(hashtextextended($1, 0))) AS granted`
	// tryLockSQL draws a token only when the lock was free.
	tryLockSQL = `SELECT CASE WHEN pg_try_advisory_lock(hashtextextended($1, 0)) THEN nextval('` + fenceSequence + `') ELSE 0 END`
	unlockSQL  = `SELECT pg_advisory_unlock(hashtextextended($1, 0))`
	fenceDDL   = `CREATE SEQUENCE IF NOT EXISTS ` + fenceSequence
)

// Lock acquires the lock, waiting in the server while another session
// holds it. It returns nil once the lock is held;
// errors.Join(ErrNotObtained, ctx.Err()) when ctx ended first; and a
// wrapped error if PostgreSQL cannot be reached or answers with an error.
// When Lock fails after its statement was sent, it closes that connection,
// so a lock granted just as it gave up dies with the session.
func (m *Mutex) Lock(ctx context.Context) error {
	_, err := m.c.lock(ctx, true, m.try)
	return err
}

// TryLock makes one attempt: (true, nil) if it got the lock, (false, nil)
// if another session holds it. Errors are as for [Mutex.Lock].
func (m *Mutex) TryLock(ctx context.Context) (bool, error) {
	return m.c.lock(ctx, false, m.try)
}

func (m *Mutex) try(ctx context.Context, conn *pgxpool.Conn, wait bool) (*hold, bool, error) {
	if err := ensure(ctx, m.c.pool, conn, fenceDDL); err != nil {
		return nil, false, err
	}
	q := tryLockSQL
	if wait {
		q = lockSQL
	}
	var fence int64
	if err := conn.QueryRow(ctx, q, m.c.key).Scan(&fence); err != nil {
		return nil, false, err
	}
	if fence == 0 {
		return nil, false, nil
	}
	return &hold{fence: uint64(fence)}, true, nil
}

// Unlock releases the lock on the connection that holds it, and returns
// the connection to the pool. It returns [ErrNotHeld] if the lock was
// never acquired, was already released, or the server ended its session
// (which released it). It ignores ctx's cancellation and bounds the
// release by its own timeout of 2s. On a transport error it closes the
// connection (the server releases the lock when it notices the session
// gone) and returns the error; the Mutex no longer holds the lock either
// way.
func (m *Mutex) Unlock(ctx context.Context) error {
	return m.c.unlock(ctx, func(ctx context.Context, h *hold) (bool, error) {
		var ok bool
		if err := h.conn.QueryRow(ctx, unlockSQL, m.c.key).Scan(&ok); err != nil {
			return false, err
		}
		return ok, nil
	})
}

// Fence returns the fencing token of the current hold: a value of the
// sequence pglock_fence drawn right after the lock was granted, larger than
// every token drawn before it. It returns 0 when the Mutex does not hold
// the lock.
func (m *Mutex) Fence() uint64 { return m.c.fence() }

// Key returns the lock's key.
func (m *Mutex) Key() string { return m.c.key }

// PID returns the server process id of the session that holds the lock (0
// when not held): what pg_locks and pg_stat_activity show, and what an
// administrator would pg_terminate_backend.
func (m *Mutex) PID() uint32 { return m.c.pid() }
