package main

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/locklab/locklab/internal/sysclient"
	"github.com/locklab/locklab/pglock"
)

// pglock: package pglock's advisory lock (pg_advisory_lock on a session,
// its token from a sequence) on one PostgreSQL server, one pool of two
// connections per contending client.
//
// pglock-row: the row lock (SELECT ... FOR UPDATE in a transaction,
// COMMIT to release), a row per key in pglock_rows.
//
// Under the fault scoreboard (e.users set) the clients dial the address
// they are given (the server, a proxy or a pooler in front of it), with
// the event's session settings.
func init() {
	gaveUp := gaveUpOn(pglock.ErrNotObtained)
	register(&impl{name: "pglock", nodes: 1, scenarios: otherScenarios, connect: connectPG(false), gaveUp: gaveUp})
	register(&impl{name: "pglock-row", nodes: 1, scenarios: otherScenarios, connect: connectPG(true), gaveUp: gaveUp})
	faultSystems["pglock"] = sysPostgres
	faultSystems["pglock-row"] = sysPostgres
	addClaims(pglockClaims, "pglock")
	addClaims(pglockRowClaims, "pglock-row")
}

// txLocker is a lock whose holder works in the lock's transaction
// (pglock.RowMutex).
type txLocker interface{ Tx() pgx.Tx }

func connectPG(row bool) func(e env) (contender, error) {
	return func(e env) (contender, error) {
		var dsn string
		var err error
		if e.users != nil {
			dsn = e.users.pgDSN(e.addrs[0])
		} else if dsn, err = others.pgDSN(); err != nil {
			return contender{}, err
		}
		pool, err := sysclient.Postgres(context.Background(), dsn, 2)
		if err != nil {
			return contender{}, err
		}
		return contender{
			locker: func(key string) locker {
				if row {
					return pglock.NewRow(pool, key)
				}
				return pglock.New(pool, key)
			},
			close: func() error { pool.Close(); return nil },
		}, nil
	}
}
