package lab09

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"sync/atomic"
)

// The order table's SQL goes through a driver that calls a hook before
// each statement, so that the lab can stall a worker between two of its
// statements (a pause between a SELECT and an UPDATE, say) wherever its
// Write sends them. With no hook in the context it is modernc.org/sqlite,
// unchanged.

// hookedDriverName is the database/sql name of the hooked driver.
const hookedDriverName = "lab09-sqlite"

func init() {
	db, err := sql.Open("sqlite", "")
	if err != nil {
		panic("lab09: the sqlite driver is not registered: " + err.Error())
	}
	base := db.Driver()
	_ = db.Close()
	sql.Register(hookedDriverName, hookedDriver{base})
}

// Statement returns the hook point just before the n-th SQL statement (1
// for the first) that the order table runs with a context from
// [WithStatementHook].
func Statement(n int) string { return fmt.Sprintf("sql#%d", n) }

type statementHookKey struct{}

type statementHook struct {
	hook func(context.Context, string)
	n    atomic.Int32
}

// WithStatementHook returns ctx with hook, which the order table calls at
// [Statement] points, counting from this context's first statement.
func WithStatementHook(ctx context.Context, hook func(context.Context, string)) context.Context {
	return context.WithValue(ctx, statementHookKey{}, &statementHook{hook: hook})
}

func before(ctx context.Context) {
	if h, ok := ctx.Value(statementHookKey{}).(*statementHook); ok {
		h.hook(ctx, Statement(int(h.n.Add(1))))
	}
}

type hookedDriver struct{ driver.Driver }

func (d hookedDriver) Open(name string) (driver.Conn, error) {
	c, err := d.Driver.Open(name)
	if err != nil {
		return nil, err
	}
	return hookedConn{c}, nil
}

// hookedConn is a connection whose statements call the hook first. It
// passes on every optional interface database/sql looks for.
type hookedConn struct{ driver.Conn }

func (c hookedConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	before(ctx)
	return c.Conn.(driver.ExecerContext).ExecContext(ctx, query, args)
}

func (c hookedConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	before(ctx)
	return c.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
}

func (c hookedConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	s, err := c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	return hookedStmt{s}, nil
}

func (c hookedConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
}

func (c hookedConn) Ping(ctx context.Context) error { return c.Conn.(driver.Pinger).Ping(ctx) }

func (c hookedConn) ResetSession(ctx context.Context) error {
	return c.Conn.(driver.SessionResetter).ResetSession(ctx)
}

func (c hookedConn) IsValid() bool { return c.Conn.(driver.Validator).IsValid() }

// hookedStmt is a prepared statement whose runs call the hook first.
type hookedStmt struct{ driver.Stmt }

func (s hookedStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	before(ctx)
	return s.Stmt.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (s hookedStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	before(ctx)
	return s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
}
