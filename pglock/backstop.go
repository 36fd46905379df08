package pglock

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DB is what the backstops need: statements on a pool, a connection or a
// transaction. *pgxpool.Pool, *pgx.Conn and pgx.Tx satisfy it.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Versioned is a table of records with a version column, for optimistic
// locking: a writer reads a record and its version, and its write applies
// only if the version is still the one it read, in one UPDATE ... WHERE
// version = $read, which also moves the version on. A lock that failed
// (two holders at once, after a failover or a pause) then costs one of the
// two writers an [ErrConflict] instead of a lost update. The table is
// (id text primary key, data text, version bigint), created if missing.
type Versioned struct {
	db    DB
	table string
}

// NewVersioned returns the versioned table named table in db. It sends
// nothing until first use.
func NewVersioned(db DB, table string) *Versioned {
	return &Versioned{db: db, table: pgx.Identifier{table}.Sanitize()}
}

func (v *Versioned) create(ctx context.Context) error {
	if v.db == nil || v.table == `""` {
		return fmt.Errorf("%w: nil db or empty table name", ErrInvalid)
	}
	_, err := v.db.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+v.table+` (id text PRIMARY KEY, data text NOT NULL DEFAULT '', version bigint NOT NULL DEFAULT 0)`)
	if err != nil && uniqueViolation(err) {
		_, err = v.db.Exec(ctx, `SELECT 1 FROM `+v.table+` LIMIT 0`)
	}
	return err
}

// Read returns record id's data and version, making the record (empty,
// version 0) if it does not exist.
func (v *Versioned) Read(ctx context.Context, id string) (data string, version int64, err error) {
	if err := v.create(ctx); err != nil {
		return "", 0, fmt.Errorf("pglock: versioned %s: %w", v.table, err)
	}
	if _, err := v.db.Exec(ctx, `INSERT INTO `+v.table+` (id) VALUES ($1) ON CONFLICT (id) DO NOTHING`, id); err != nil {
		return "", 0, fmt.Errorf("pglock: versioned %s: %w", v.table, err)
	}
	err = v.db.QueryRow(ctx, `SELECT data, version FROM `+v.table+` WHERE id = $1`, id).Scan(&data, &version)
	if err != nil {
		return "", 0, fmt.Errorf("pglock: read %s %q: %w", v.table, id, err)
	}
	return data, version, nil
}

// Write sets record id's data if its version is still read (the version
// Read returned), and returns the new version, read+1. If the version has
// moved on, it changes nothing and returns an error wrapping
// [ErrConflict]. The check and the write are one statement, so nothing can
// come between them.
func (v *Versioned) Write(ctx context.Context, id, data string, read int64) (int64, error) {
	tag, err := v.db.Exec(ctx, `UPDATE `+v.table+` SET data = $2, version = version + 1 WHERE id = $1 AND version = $3`, id, data, read)
	if err != nil {
		return 0, fmt.Errorf("pglock: write %s %q: %w", v.table, id, err)
	}
	if tag.RowsAffected() == 0 {
		return 0, fmt.Errorf("%w: %s %q is no longer at version %d", ErrConflict, v.table, id, read)
	}
	return read + 1, nil
}

// Once records operations that must run at most once, such as the refund
// of an order, in a table whose primary key is the operation's key: the
// unique constraint is the backstop the chapter puts behind a lock, which
// refuses a second record however the lock failed. The table is (key text
// primary key, by text), created if missing. Do the operation's own writes
// in the same transaction as [Once.Do] (pass a pgx.Tx as the DB), so that
// they commit only if the record does.
type Once struct {
	db    DB
	table string
}

// NewOnce returns the once-only table named table in db. It sends nothing
// until first use.
func NewOnce(db DB, table string) *Once {
	return &Once{db: db, table: pgx.Identifier{table}.Sanitize()}
}

// Do records that the operation key ran, done by by. It returns an error
// wrapping [ErrDuplicate], and records nothing, if key was recorded
// before. Inside a transaction, a duplicate aborts the transaction (roll
// it back).
func (o *Once) Do(ctx context.Context, key, by string) error {
	if o.db == nil || o.table == `""` {
		return fmt.Errorf("%w: nil db or empty table name", ErrInvalid)
	}
	if _, err := o.db.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+o.table+` (key text PRIMARY KEY, by text NOT NULL)`); err != nil && !uniqueViolation(err) {
		return fmt.Errorf("pglock: once %s: %w", o.table, err)
	}
	_, err := o.db.Exec(ctx, `INSERT INTO `+o.table+` (key, by) VALUES ($1, $2)`, key, by)
	switch {
	case uniqueViolation(err):
		return fmt.Errorf("%w: %s %q was recorded before", ErrDuplicate, o.table, key)
	case err != nil:
		return fmt.Errorf("pglock: once %s %q: %w", o.table, key, err)
	}
	return nil
}

// By returns who recorded key, or "" if nobody has.
func (o *Once) By(ctx context.Context, key string) (string, error) {
	var by string
	err := o.db.QueryRow(ctx, `SELECT by FROM `+o.table+` WHERE key = $1`, key).Scan(&by)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("pglock: once %s %q: %w", o.table, key, err)
	}
	return by, nil
}
