package pglock

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Fencing tokens. Both locks draw theirs from the sequence pglock_fence,
// in the statement that is granted the lock, after the grant: so a token
// is larger than the token of every hold granted before it (on any key).
//
// A sequence alone does not survive a crash in every case: nextval is
// written to the WAL ahead of its use (32 values at a time) but flushed
// only when a transaction that wrote WAL commits, and a lock held in an
// open transaction (a RowMutex, or a Mutex behind a pooler) commits at
// Unlock. A server killed before that flush restarts with the sequence
// further back, and hands out again the tokens of the holders it killed.
// So every token also carries an epoch:
//
//	token = (epoch-1)·2^40 + n,  n = nextval('pglock_fence') < 2^40
//
// The current epoch is the one row of the unlogged table pglock_epoch,
// which PostgreSQL empties in the crash recovery after any crash (and
// keeps across a clean restart, which flushes everything). The first Lock
// that finds it empty makes the next epoch, one more than the largest in
// the logged table pglock_epochs, and commits both with
// synchronous_commit on: the epoch is on disk before any token of it is
// handed out. The lock statement reads the epoch and draws n in one
// statement on one server process, and a crash ends every server process,
// so no token mixes an epoch with an n drawn after a crash. Every token
// drawn after a crash is therefore larger than every token drawn before
// it, whatever the sequence lost. On a fresh database the first epoch is
// 1 and tokens are the sequence's values: 1, 2, 3...

const (
	// counterBits is the width of n in a token.
	counterBits = 40
	// fenceDDL makes the sequence and the two epoch tables.
	fenceDDL = `CREATE SEQUENCE IF NOT EXISTS ` + fenceSequence + ` MAXVALUE 1099511627775;
CREATE TABLE IF NOT EXISTS pglock_epochs (epoch bigint PRIMARY KEY);
CREATE UNLOGGED TABLE IF NOT EXISTS pglock_epoch (epoch bigint NOT NULL)`
	// newEpochSQL (run in [quiet]) makes the next epoch if there is none
	// since the last crash; it changes nothing otherwise. The table lock makes
	// concurrent runs take turns, and each statement's fresh snapshot
	// (READ COMMITTED) sees what the one before committed.
	newEpochSQL = `SET LOCAL synchronous_commit = on;
LOCK TABLE pglock_epochs IN EXCLUSIVE MODE;
INSERT INTO pglock_epochs SELECT last + 1 FROM (SELECT coalesce(max(epoch), 0) AS last FROM pglock_epochs) AS e WHERE NOT EXISTS (SELECT FROM pglock_epoch);
INSERT INTO pglock_epoch SELECT last FROM (SELECT max(epoch) AS last FROM pglock_epochs) AS e WHERE NOT EXISTS (SELECT FROM pglock_epoch)`
	// drawSQL, in a lock statement's select list after the grant, reads
	// the epoch (empty if a crash emptied it) and draws n.
	drawSQL = `(SELECT max(epoch) FROM pglock_epoch), nextval('` + fenceSequence + `')`
)

// prepare makes the sequence and tables (once per pool), and the epoch
// (once per pool, or again after a crash emptied it, when again is set).
func prepare(ctx context.Context, pool Pool, conn *pgxpool.Conn, again bool) error {
	if err := ensure(ctx, pool, conn, fenceDDL); err != nil {
		return err
	}
	if again {
		if _, err := run(ctx, conn, quiet(newEpochSQL)); err != nil {
			return fmt.Errorf("make the next epoch: %w", err)
		}
		return nil
	}
	return ensure(ctx, pool, conn, newEpochSQL)
}

// token makes the token of a hold from what drawSQL read: ok is false when
// there was no epoch (the server crashed since it was made).
func token(epoch, n string) (fence uint64, ok bool, err error) {
	if epoch == "" {
		return 0, false, nil
	}
	e, err := strconv.ParseUint(epoch, 10, 64)
	if err != nil || e == 0 || e >= 1<<(64-counterBits) {
		return 0, false, fmt.Errorf("pglock_epoch holds %q: want a number from 1 to 2^24-1", epoch)
	}
	v, err := strconv.ParseUint(n, 10, 64)
	if err != nil || v == 0 || v >= 1<<counterBits {
		return 0, false, fmt.Errorf("nextval('%s') = %q: want a number from 1 to 2^40-1", fenceSequence, n)
	}
	return (e-1)<<counterBits + v, true, nil
}

// Timeouts. A lock statement waits until the lock is granted or its
// context ends: the session's statement_timeout and lock_timeout (set by
// the server, the role, the database or the connection) would otherwise
// end the wait with SQLSTATE 57014 or 55P03. timeoutsOff, run in the
// lock's transaction before the lock statement, keeps them and sets both
// to 0 for the transaction; timeoutsBack, in the lock statement's select
// list after the grant, puts them back, so the holder's own statements in
// a RowMutex's transaction run under them.
const (
	timeoutsOff = `SELECT set_config('pglock.statement_timeout', current_setting('statement_timeout'), true),
	set_config('pglock.lock_timeout', current_setting('lock_timeout'), true),
	set_config('statement_timeout', '0', true),
	set_config('lock_timeout', '0', true)`
	timeoutsBack = `set_config('statement_timeout', current_setting('pglock.statement_timeout'), true),
	set_config('lock_timeout', current_setting('pglock.lock_timeout'), true)`
)

// quiet wraps statements in a READ COMMITTED transaction whose timeouts
// are off: pglock's own set-up statements (its tables, the epoch, a key's
// row) wait only as long as the caller's context lets them.
func quiet(sql string) string {
	return "BEGIN ISOLATION LEVEL READ COMMITTED;\n" + timeoutsOff + ";\n" + sql + ";\nCOMMIT"
}
