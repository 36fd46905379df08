package registry

import (
	"context"
	"errors"

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
	register(&Lock{Name: "pglock", Nodes: 1, System: SysPostgres, Scenarios: OtherScenarios, Connect: connectPG(false), GaveUp: gaveUp, Claims: pglockClaims})
	register(&Lock{Name: "pglock-row", Nodes: 1, Transactional: true, System: SysPostgres, Scenarios: OtherScenarios, Connect: connectPG(true), GaveUp: gaveUp, Claims: pglockRowClaims})
}

// TxLocker is a lock whose holder works in the lock's transaction
// (pglock.RowMutex).
type TxLocker interface{ Tx() pgx.Tx }

func connectPG(row bool) func(e Env) (Contender, error) {
	return func(e Env) (Contender, error) {
		var dsn string
		var err error
		if e.Users != nil {
			dsn = e.Users.PGDSN(e.Addrs[0])
		} else if e.Servers == nil {
			return Contender{}, errors.New("pglock: no PostgreSQL server in this run")
		} else if dsn, err = e.Servers.PostgresDSN(); err != nil {
			return Contender{}, err
		}
		pool, err := sysclient.Postgres(context.Background(), dsn, 2)
		if err != nil {
			return Contender{}, err
		}
		return Contender{
			Locker: func(key string) Locker {
				if row {
					return pglock.NewRow(pool, key)
				}
				return pglock.New(pool, key)
			},
			Close: func() error { pool.Close(); return nil },
		}, nil
	}
}

// pglockClaims: a session advisory lock; nothing expires while the holder
// lives, and tokens come from a sequence that outlives a crash.
var pglockClaims = Claims{
	"pause":      survives(`a paused holder: nothing expires while the holder lives, so nothing is granted twice`),
	"lost-reply": survives(`a lost reply: the connection is closed, which ends the session and any lock the statement took`),
	"late":       survives(`a command delivered late: the connection is closed, which ends the session and any lock the statement took`),
	"latency":    survives(`a write delayed in the network: nothing expires while the holder lives`),
	"kill":       survives(`a killed holder: the session ends and the lock with it`),
	"crash":      survives(`a server crash: every token drawn after it is larger than every one before`),
	"expiry":     survives(`a session ending mid-Lock: the lock ends with the session`),
	"pooler":     survives(`a pooler in session or transaction pooling`),
}

// pglockRowClaims: a row lock held by an open transaction; it also claims
// the isolation level does not matter.
var pglockRowClaims = pglockClaims.with(Claims{
	"lost-reply": survives(`a lost reply: either way the row lock is gone once the transaction ends`),
	"late":       survives(`a command delivered late: either way the row lock is gone once the transaction ends`),
	"kill":       survives(`a killed holder: the transaction ends and the row lock with it`),
	"expiry":     survives(`a session ending mid-Lock: the transaction ends and the row lock with it`),
	"isolation":  survives(`any default_transaction_isolation: each statement sees every earlier holder's committed work`),
})
