package sysclient

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"
)

const (
	// pgConnectTimeout bounds a new connection.
	pgConnectTimeout = 2 * time.Second
	// pgCancelGrace is how long a query whose context ended may take to
	// stop after the cancel request, before its connection is closed.
	pgCancelGrace = time.Second
)

// Postgres returns a pool of at most maxConns connections to the server at
// dsn. When a query's context ends, the pool's connections send
// PostgreSQL a cancel request (so a lock wait stops in the server, not only
// in the client) and close the connection if the query has not stopped a
// second later. Close the pool when done.
func Postgres(ctx context.Context, dsn string, maxConns int32) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = maxConns
	cfg.ConnConfig.ConnectTimeout = pgConnectTimeout
	cfg.ConnConfig.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: pgCancelGrace}
	}
	return pgxpool.NewWithConfig(ctx, cfg)
}
