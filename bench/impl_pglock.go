package main

import (
	"context"

	"github.com/locklab/locklab/internal/sysclient"
	"github.com/locklab/locklab/pglock"
)

// pglock: package pglock's advisory lock (pg_advisory_lock on a session,
// its token from a sequence) on one PostgreSQL server, one pool of two
// connections per contending client.
//
// pglock-row: the row lock (SELECT ... FOR UPDATE in a transaction,
// COMMIT to release), a row per key in pglock_rows.
func init() {
	gaveUp := gaveUpOn(pglock.ErrNotObtained)
	register(&impl{name: "pglock", nodes: 1, scenarios: otherScenarios, noFaults: otherNoFaults, connect: connectPG(false), gaveUp: gaveUp})
	register(&impl{name: "pglock-row", nodes: 1, scenarios: otherScenarios, noFaults: otherNoFaults, connect: connectPG(true), gaveUp: gaveUp})
}

func connectPG(row bool) func(e env) (contender, error) {
	return func(e env) (contender, error) {
		dsn, err := others.pgDSN()
		if err != nil {
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
