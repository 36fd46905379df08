package lab09

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strings"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver: pure Go, no cgo

	"github.com/locklab/locklab/fencing"
)

// createSQL is the order table of section 35.4.4 of "A complete guide to
// distributed locks: from SETNX to Redisson": one row per
// order, which remembers the last fencing token written with it.
const createSQL = `CREATE TABLE IF NOT EXISTS resources (
	id                 TEXT    PRIMARY KEY,
	data               TEXT    NOT NULL,
	last_fencing_token INTEGER NOT NULL
)`

// busyTimeoutMs is how long a statement waits for another process holding
// SQLite's write lock.
const busyTimeoutMs = 10000

// table is the order table in one SQLite file, shared by [UncheckedStore]
// and [Exercise]: opening it, making sure an order's row exists, reading a
// row. Only their Write differs.
type table struct {
	db *sql.DB
}

// openTable opens (creating them if missing) the SQLite file at path and
// the order table in it. The file is in WAL mode, and a statement waits up
// to 10s for the write lock, so processes can share it.
func openTable(ctx context.Context, path string) (*table, error) {
	switch {
	case path == "":
		return nil, errors.New("lab09: open store: empty path")
	case strings.Contains(path, "?"):
		return nil, fmt.Errorf("lab09: open store %q: the path contains '?'", path)
	}
	dsn := fmt.Sprintf("%s?_pragma=busy_timeout(%d)&_pragma=journal_mode(WAL)", path, busyTimeoutMs)
	db, err := sql.Open(hookedDriverName, dsn)
	if err != nil {
		return nil, fmt.Errorf("lab09: open store %q: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, createSQL); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("lab09: open store %q: %w", path, err)
	}
	return &table{db: db}, nil
}

// ensureRow creates order id's row, empty and with token 0, if it does not
// exist yet: in the order service the row exists from the moment the order
// is placed. It never changes an existing row.
func (t *table) ensureRow(ctx context.Context, id string, tok fencing.Token) error {
	switch {
	case id == "":
		return errors.New("lab09: write: empty order id")
	case tok == 0 || tok > math.MaxInt64:
		return fmt.Errorf("lab09: write %q with token %d (want 1 to 2^63-1)", id, tok)
	}
	_, err := t.db.ExecContext(ctx,
		`INSERT OR IGNORE INTO resources (id, data, last_fencing_token) VALUES (?, '', 0)`, id)
	if err != nil {
		return fmt.Errorf("lab09: write %q: %w", id, err)
	}
	return nil
}

// Read returns the data of order id and the last token written with it;
// an order never written reads as "" with token 0.
func (t *table) Read(ctx context.Context, id string) (data string, last fencing.Token, err error) {
	var tok int64
	err = t.db.QueryRowContext(ctx, `SELECT data, last_fencing_token FROM resources WHERE id = ?`, id).Scan(&data, &tok)
	if errors.Is(err, sql.ErrNoRows) {
		return "", 0, nil
	}
	if err != nil {
		return "", 0, fmt.Errorf("lab09: read %q: %w", id, err)
	}
	return data, fencing.Token(tok), nil
}

// Close closes the database.
func (t *table) Close() error { return t.db.Close() }

// UncheckedStore is the order table as the order service first wrote it:
// every write carries the worker's fencing token, and the table stores the
// token with the data, but nothing compares it with the token already
// there. A worker that wakes up after its lease ran out overwrites what the
// newer holder wrote. It is the broken store of the lab.
type UncheckedStore struct{ *table }

// OpenUnchecked opens the order table in the SQLite file at path, creating
// both if missing. Close it when done.
func OpenUnchecked(ctx context.Context, path string) (*UncheckedStore, error) {
	t, err := openTable(ctx, path)
	if err != nil {
		return nil, err
	}
	return &UncheckedStore{t}, nil
}

// Write sets the data of order id and records tok as its last token,
// whatever token the row had.
func (s *UncheckedStore) Write(ctx context.Context, id, data string, tok fencing.Token) error {
	if err := s.ensureRow(ctx, id, tok); err != nil {
		return err
	}
	_, err := s.db.ExecContext(ctx,
		`UPDATE resources SET data = ?, last_fencing_token = ? WHERE id = ?`,
		data, int64(tok), id)
	if err != nil {
		return fmt.Errorf("lab09: write %q: %w", id, err)
	}
	return nil
}
