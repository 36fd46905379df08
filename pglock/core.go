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
	"github.com/locklab/locklab/internal/held"
	"github.com/locklab/locklab/internal/retry"
	"github.com/locklab/locklab/observe"
)

// Pool is the part of a pgx pool that the locks use: a connection of their
// own for each hold. *pgxpool.Pool satisfies it.
type Pool interface {
	Acquire(ctx context.Context) (*pgxpool.Conn, error)
}

// core is what Mutex and RowMutex share: the hold, its connection, the
// options, and the acquire/release skeleton around their SQL.
type core struct {
	name string // "pglock" or "pglock-row", for observers and errors
	pool Pool
	key  string
	err  error

	base held.Frame[hold] // the hook, the observer (as name and key) and the current hold

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
}

// attempt is one kind's lock statement on conn: it reports whether the
// lock is held, with its hold, or an error.
type attempt func(ctx context.Context, conn *pgxpool.Conn, wait bool) (*hold, bool, error)

func newCore(name string, pool Pool, key string, o options, errs []error) core {
	if isNilPool(pool) {
		errs = append(errs, args.Invalid(ErrInvalid, "nil pool"))
	}
	if key == "" {
		errs = append(errs, args.Invalid(ErrInvalid, "empty key"))
	}
	if strings.ContainsRune(key, 0) {
		errs = append(errs, args.Invalid(ErrInvalid, "key holds a NUL byte, which PostgreSQL text cannot"))
	}
	return core{
		name: name,
		pool: pool,
		key:  key,
		err:  errors.Join(errs...),
		base: held.Frame[hold]{Kind: name, Key: key, Hook: o.hook, Obs: o.observer},
	}
}

func isNilPool(p Pool) bool {
	if p == nil {
		return true
	}
	pp, ok := p.(*pgxpool.Pool)
	return ok && pp == nil
}

func (c *core) check() error {
	if c.name == "" {
		return args.Invalid(ErrInvalid, "not made by its constructor")
	}
	return c.err
}

// lock runs try on a connection of its own and keeps the hold if it got
// the lock. Whenever the outcome is unknown (an error after the statement
// was sent, or ctx ending mid-wait) the connection is closed, which ends
// the session on the server and any lock it may hold.
func (c *core) lock(ctx context.Context, wait bool, try attempt) (bool, error) {
	return c.base.Attempt(ctx, wait, c.check, func(ctx context.Context, wait bool) (bool, error) { return c.lock1(ctx, wait, try) })
}

func (c *core) lock1(ctx context.Context, wait bool, try attempt) (bool, error) {
	if err := retry.CtxErr(ctx); err != nil {
		return false, errors.Join(ErrNotObtained, err)
	}
	if wait {
		// A Lock waits in the server on a connection of its own: take a
		// turn among this process's waiters on the pool first, so that
		// waiters leave connections for the holders' own work.
		leave, err := waitTurn(ctx, c.pool)
		if err != nil {
			return false, errors.Join(ErrNotObtained, err)
		}
		defer leave()
	}
	conn, err := c.pool.Acquire(ctx)
	if err != nil {
		return false, c.failed(ctx, fmt.Errorf("%s: lock %q: connect: %w", c.name, c.key, err))
	}
	h, ok, err := try(ctx, conn, wait)
	if err != nil {
		destroy(conn)
		return false, c.failed(ctx, fmt.Errorf("%s: lock %q: %w", c.name, c.key, explain(err)))
	}
	if !ok {
		conn.Release()
		return false, nil
	}
	h.conn = conn
	c.base.Cur.Set(h)
	c.base.At(ctx, HookAcquired)
	return true, nil
}

// unlock runs release on the hold's connection, on a context detached from
// ctx's cancellation and bounded by retry.ReleaseTimeout, then returns the
// connection to the pool, or destroys it when its state is unknown. The
// hold is forgotten whatever happens: a connection whose release failed is
// closed, which ends the session and its locks on the server.
func (c *core) unlock(ctx context.Context, release func(ctx context.Context, h *hold) (bool, error)) error {
	c.unlocking.Lock()
	defer c.unlocking.Unlock()
	h, err := c.base.Releasing(ctx, c.check, ErrNotHeld, HookBeforeRelease)
	if err != nil {
		return err
	}
	if h.conn.Conn().IsClosed() {
		// The connection died before the release was sent (the server
		// ended the session, or a failed statement closed it): nothing
		// committed, and the session's locks end with it.
		heldFor := c.base.Cur.Forget(h)
		destroy(h.conn)
		c.base.Report(observe.Lost, heldFor, ErrNotHeld)
		return fmt.Errorf("%w: its connection was closed before the release (the server ends the session, and its locks and transaction, once it notices)", ErrNotHeld)
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), retry.ReleaseTimeout)
	defer cancel()
	was, err := release(rctx, h)
	heldFor := c.base.Cur.Forget(h)
	switch {
	case err != nil && sessionEnded(err):
		destroy(h.conn)
		c.base.Report(observe.Lost, heldFor, ErrNotHeld)
		return fmt.Errorf("%w: the server ended the session: %v", ErrNotHeld, err)
	case err != nil:
		destroy(h.conn)
		return fmt.Errorf("%s: unlock %q (the connection is closed, which ends the session and its locks once the server notices): %w", c.name, c.key, err)
	case !was:
		h.conn.Release()
		c.base.Report(observe.Lost, heldFor, ErrNotHeld)
		return ErrNotHeld
	}
	h.conn.Release()
	c.base.Report(observe.Released, heldFor, nil)
	return nil
}

// fence returns the current hold's token, 0 when not held.
func (c *core) fence() uint64 {
	if h := c.base.Cur.Get(); h != nil {
		return h.fence
	}
	return 0
}

// pid returns the server process id of the current hold's session, 0 when
// not held.
func (c *core) pid() uint32 {
	if h := c.base.Cur.Get(); h != nil {
		return h.pid
	}
	return 0
}

// failed returns ErrNotObtained joined with ctx's error if ctx ended, err
// otherwise.
func (c *core) failed(ctx context.Context, err error) error {
	if cerr := retry.CtxErr(ctx); cerr != nil {
		return errors.Join(ErrNotObtained, cerr)
	}
	return err
}

// destroy closes conn's connection (the server ends the session, and its
// locks and transaction with it, once it sees the connection close; a
// pooler closes its server connection if a transaction was open on it)
// and hands it back to the pool, which discards it.
func destroy(conn *pgxpool.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), retry.ReleaseTimeout)
	defer cancel()
	_ = conn.Conn().Close(ctx)
	conn.Release()
}

// run sends sql, one or more statements with no parameters, as one simple
// query (one round trip, no prepared statement for a pooler to lose), and
// returns the rows of the last SELECT, as text.
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
