package pglock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/locklab/locklab/internal/args"
	"github.com/locklab/locklab/internal/frame"
	"github.com/locklab/locklab/internal/retry"
	"github.com/locklab/locklab/observe"
)

// Pool is the part of a pgx pool that the locks use: a connection of their
// own for each hold. *pgxpool.Pool satisfies it.
type Pool interface {
	Acquire(ctx context.Context) (*pgxpool.Conn, error)
}

// core is what Mutex and RowMutex share: the pool, the key, the frame
// (the argument error, the hook, the observer and the current hold), and
// the steps before and after their own SQL, which their Lock, TryLock and
// Unlock call in turn.
type core struct {
	pool Pool
	key  string

	// The fields above, and f's but Cur, are set by the constructor and
	// never change.

	f frame.Holding[hold] // the argument error, the hook, the observer and the current hold

	// unlocking serializes Unlock: a hold's connection serves one
	// release at a time, and a second Unlock of the same hold finds it
	// gone (ErrNotHeld) instead of using the connection beside the first.
	unlocking sync.Mutex
}

// hold is one acquisition: the connection it lives on, the transaction it
// lives in (if any), its fencing token and the server process that holds
// it. A hold never changes once made, so its fields are read without a
// lock; only Unlock touches its connection.
type hold struct {
	conn  *pgxpool.Conn
	inTx  bool   // the lock lives in a transaction left open until Unlock
	tx    pgx.Tx // RowMutex only: the transaction handed out by Tx
	fence uint64
	pid   uint32 // the server process (pg_backend_pid) holding the lock
	ended func() // counts the hold out of its pool's (see waitTurn), once its connection is back
}

// newCore returns the core of a lock of kind ("pglock" or "pglock-row")
// on key, with the options o and err, the invalid arguments its
// constructor found.
func newCore(kind string, pool Pool, key string, o options, err error) core {
	return core{
		pool: pool,
		key:  key,
		f:    frame.Holding[hold]{Frame: frame.Frame{Kind: kind, Key: key, Err: err, Hook: o.hook, Obs: o.observer}},
	}
}

// target returns the error, wrapping ErrInvalid, for the pool and key a
// lock is made with; nil when both will do.
func target(pool Pool, key string) error {
	switch {
	case args.IsNil(pool):
		return args.Invalid(ErrInvalid, "nil pool")
	case key == "":
		return args.Invalid(ErrInvalid, "empty key")
	case strings.ContainsRune(key, 0):
		return args.Invalid(ErrInvalid, "key holds a NUL byte, which PostgreSQL text cannot")
	}
	return nil
}

// queueing is what a lock statement does when another session holds the
// lock.
type queueing int

const (
	once   queueing = iota // report the lock taken (TryLock)
	inLine                 // wait in the server for the lock (Lock)
)

// connect returns a connection of the pool's for one attempt at the lock,
// and leave, to call once the attempt is over. A Lock (inLine) waits in
// the server on a connection of its own: it first takes a turn among this
// process's waiters on the pool (see waitTurn), so that waiters leave
// connections for the holders' own work; leave ends the turn.
func (c *core) connect(ctx context.Context, how queueing) (conn *pgxpool.Conn, leave func(), err error) {
	if err := retry.CtxErr(ctx); err != nil {
		return nil, nil, errors.Join(ErrNotObtained, err)
	}
	leave = func() {}
	if how == inLine {
		if leave, err = waitTurn(ctx, c.pool); err != nil {
			return nil, nil, errors.Join(ErrNotObtained, err)
		}
	}
	conn, err = c.pool.Acquire(ctx)
	if err != nil {
		leave()
		return nil, nil, retry.Failed(ctx, ErrNotObtained, fmt.Errorf("%s: lock %q: connect: %w", c.f.Kind, c.key, err))
	}
	return conn, leave, nil
}

// took ends an attempt on conn, whose lock statement returned h (nil when
// another session holds the lock) or err: it keeps the hold and returns
// true, or gives conn back to the pool. Whenever the outcome is unknown (an
// error after the statement was sent, or ctx ending mid-wait) it closes
// conn, which ends the session on the server and any lock it may hold.
func (c *core) took(ctx context.Context, conn *pgxpool.Conn, h *hold, err error) (bool, error) {
	switch {
	case err != nil:
		destroy(conn)
		return false, retry.Failed(ctx, ErrNotObtained, fmt.Errorf("%s: lock %q: %w", c.f.Kind, c.key, explain(err)))
	case h == nil:
		conn.Release()
		return false, nil
	}
	h.conn = conn
	h.ended = held(c.pool)
	c.f.Cur.Set(h)
	c.f.At(ctx, HookAcquired)
	return true, nil
}

// releasing begins an Unlock, after its check and with c.unlocking held:
// it returns the current hold, having called the hook, or ErrNotHeld. A
// hold whose connection died before the release (the server ended the
// session, or a failed statement closed it) is ended here as lost: nothing
// committed, and the session's locks end with it.
func (c *core) releasing(ctx context.Context) (*hold, error) {
	h, err := c.f.Releasing(ctx, ErrNotHeld, HookBeforeRelease)
	if err != nil {
		return nil, err
	}
	if h.conn.Conn().IsClosed() {
		err := c.f.Ended(h, observe.Lost, ErrNotHeld)
		destroy(h.conn)
		h.ended()
		return nil, fmt.Errorf("%w: its connection was closed before the release (the server ends the session, and its locks and transaction, once it notices)", err)
	}
	return h, nil
}

// released ends an Unlock whose release of h returned was (whether the
// lock was still held) or err. It forgets the hold whatever happened, and
// returns the connection to the pool, or closes it when its state is
// unknown: a connection whose release failed is closed, which ends the
// session and its locks on the server.
func (c *core) released(h *hold, was bool, err error) error {
	defer h.ended()
	switch {
	case err != nil && sessionEnded(err):
		lost := c.f.Ended(h, observe.Lost, ErrNotHeld)
		destroy(h.conn)
		return fmt.Errorf("%w: the server ended the session: %v", lost, err)
	case err != nil:
		c.f.Cur.Forget(h)
		destroy(h.conn)
		return fmt.Errorf("%s: unlock %q (the connection is closed, which ends the session and its locks once the server notices): %w", c.f.Kind, c.key, err)
	case !was:
		lost := c.f.Ended(h, observe.Lost, ErrNotHeld)
		h.conn.Release()
		return lost
	}
	err = c.f.Ended(h, observe.Released, nil)
	h.conn.Release()
	return err
}

// fence returns the current hold's token, 0 when not held.
func (c *core) fence() uint64 {
	if h := c.f.Cur.Get(); h != nil {
		return h.fence
	}
	return 0
}

// pid returns the server process id of the current hold's session, 0 when
// not held.
func (c *core) pid() uint32 {
	if h := c.f.Cur.Get(); h != nil {
		return h.pid
	}
	return 0
}

// destroy closes conn's connection (the server ends the session, and its
// locks and transaction with it, once it sees the connection close; a
// pooler closes its server connection if a transaction was open on it)
// and hands it back to the pool, which discards it.
func destroy(conn *pgxpool.Conn) {
	ctx, cancel := retry.Detach(context.Background())
	defer cancel()
	_ = conn.Conn().Close(ctx)
	conn.Release()
}

// run sends sql, one or more statements with no parameters, as one simple
// query (no prepared statement for a pooler to lose), and returns the rows
// of the last SELECT, as text.
func run(ctx context.Context, conn *pgxpool.Conn, sql string) ([][]string, error) {
	results, err := conn.Conn().PgConn().Exec(ctx, sql).ReadAll()
	if err != nil {
		return nil, err
	}
	var rows [][]string
	for _, r := range results {
		if r.Err != nil {
			return nil, r.Err
		}
		if !r.CommandTag.Select() {
			continue
		}
		rows = rows[:0]
		for _, row := range r.Rows {
			vals := make([]string, len(row))
			for i, v := range row {
				vals[i] = string(v)
			}
			rows = append(rows, vals)
		}
	}
	return rows, nil
}

// literal quotes s as an SQL string literal. The E” form means the same
// whatever standard_conforming_strings says.
func literal(s string) string {
	return "E'" + strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(s) + "'"
}

// explain adds what a pooler's refusal means to err.
func explain(err error) error {
	if strings.Contains(err.Error(), "statement pooling mode") {
		return fmt.Errorf("a pooler in statement pooling (PgBouncer's pool_mode = statement) refuses the transaction the lock needs; use session or transaction pooling, or connect to PostgreSQL directly: %w", err)
	}
	return err
}

// schemas remembers which tables and sequences exist, per pool, so that
// each is created (IF NOT EXISTS) once per process and not on every Lock.
var schemas sync.Map // schemaKey -> struct{}

type schemaKey struct {
	pool Pool
	ddl  string
}

// ensure runs ddl (CREATE ... IF NOT EXISTS) on conn once per pool, in
// [quiet].
// Concurrent CREATE ... IF NOT EXISTS can still fail with a unique
// violation in PostgreSQL's catalog when two sessions race; the loser
// tries once more.
func ensure(ctx context.Context, pool Pool, conn *pgxpool.Conn, ddl string) error {
	k := schemaKey{pool, ddl}
	if _, ok := schemas.Load(k); ok {
		return nil
	}
	_, err := run(ctx, conn, quiet(ddl))
	if err != nil && uniqueViolation(err) {
		_, err = run(ctx, conn, quiet(ddl))
	}
	if err != nil {
		return fmt.Errorf("%s: %w", ddl, err)
	}
	schemas.Store(k, struct{}{})
	return nil
}
