package fencing

// The store.
//
// [Store] keeps each resource as a row (id, data, last_token) in SQLite
// through the pure-Go driver modernc.org/sqlite, and writes with one atomic
// statement, the fencing rule:
//
//	UPDATE resources SET data=?, last_token=? WHERE id=? AND last_token < ?
//
// in its upsert form, so that the first write to a row obeys the rule too
// (an absent row has seen no token). Zero rows changed means the token is
// stale: [Store.Write] returns [ErrStaleToken] and the row is unchanged. Equal
// tokens are refused as well, so each token writes a row at most once. The
// database file is in WAL mode with a busy timeout, so several processes can
// share it and the rule still holds between them.
//

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strings"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver: pure Go, no cgo
)

const (
	// storeBusyTimeout is how long a write waits, in milliseconds, for
	// another connection or process holding SQLite's write lock.
	storeBusyTimeout = 10000
	// storeTable holds one row per protected resource.
	storeTable = "fenced_resources"
)

// The store's statements. The table is created if missing.
const (
	createSQL = `CREATE TABLE IF NOT EXISTS ` + storeTable + ` (
	id         TEXT    PRIMARY KEY,
	data       TEXT    NOT NULL,
	last_token INTEGER NOT NULL
)`
	// writeSQL is the fencing rule in one atomic statement: insert the row if
	// it is absent (an absent row has seen no token), or else update it only
	// if the write's token is larger than every token the row has accepted.
	// It is the upsert form of
	//   UPDATE resources SET data=?, last_token=? WHERE id=? AND last_token < ?
	writeSQL = `INSERT INTO ` + storeTable + ` (id, data, last_token) VALUES (?, ?, ?)
	ON CONFLICT (id) DO UPDATE SET data = excluded.data, last_token = excluded.last_token
	WHERE ` + storeTable + `.last_token < excluded.last_token`
	readSQL = `SELECT data, last_token FROM ` + storeTable + ` WHERE id = ?`
)

// Store is the protected resource: rows of data, each remembering the
// largest fencing token it has accepted, kept in a SQL database (SQLite by
// default). A write is applied only if its token is larger than that, so
// writes to one row are accepted in strictly increasing token order, even
// from several Store values, connections or processes on the same database.
//
// A Store is safe for concurrent use. Its methods on a nil *Store return an
// error wrapping [ErrInvalid].
type Store struct {
	db  *sql.DB
	own bool // Close closes db
}

// OpenStore opens (creating it if missing) the SQLite database file at
// path, with the pure-Go driver modernc.org/sqlite, and creates the store's
// table if missing. The file is put in WAL mode and each connection waits up
// to 10s for the write lock, so several processes may open the same file
// and write at once. The Store uses one connection, so its own operations
// run one at a time, as SQLite's writes do anyway. path is a plain file
// name; it must not contain '?', which would start driver parameters.
// ":memory:" gives a private in-memory database. Close the Store when done.
func OpenStore(ctx context.Context, path string) (*Store, error) {
	switch {
	case path == "":
		return nil, invalid("empty store path")
	case strings.Contains(path, "?"):
		return nil, invalid("store path %q contains '?'", path)
	}
	dsn := fmt.Sprintf("%s?_pragma=busy_timeout(%d)", path, storeBusyTimeout)
	if path != ":memory:" {
		dsn += "&_pragma=journal_mode(WAL)"
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("fencing: open store %q: %w", path, err)
	}
	// One connection: SQLite lets one writer in at a time anyway, and
	// queueing in database/sql is cheaper than SQLite's busy-wait sleeps.
	// For ":memory:" it is needed: each connection would get its own empty
	// database.
	db.SetMaxOpenConns(1)
	s := &Store{db: db, own: true}
	if err := s.init(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("fencing: open store %q: %w", path, err)
	}
	return s, nil
}

// NewStore returns a Store on db, an SQLite database opened with the
// "sqlite" driver (modernc.org/sqlite), creating the store's table if
// missing. The statements use SQLite's "?" placeholders and upsert syntax;
// other databases are not supported. [Store.Close] does not close db: the
// caller owns it.
func NewStore(ctx context.Context, db *sql.DB) (*Store, error) {
	if db == nil {
		return nil, invalid("nil *sql.DB")
	}
	s := &Store{db: db}
	if err := s.init(ctx); err != nil {
		return nil, fmt.Errorf("fencing: new store: %w", err)
	}
	return s, nil
}

func (s *Store) init(ctx context.Context) error {
	_, err := s.db.ExecContext(ctx, createSQL)
	return err
}

// Write sets the data of resource id, carrying the fencing token tok of the
// lock hold it is made under. The write is applied only if tok is larger
// than every token the resource has accepted (a resource never written has
// accepted none). Otherwise nothing changes and Write returns an error
// wrapping [ErrStaleToken] that names id, tok and the newest token seen.
//
// Equal tokens are refused too: each token writes a resource at most once,
// so a token issued twice (see the package doc on failover) cannot write
// twice. A holder that needs several changes makes them in one Write.
//
// An empty id, token 0 or a token above 2^63-1 return an error wrapping
// [ErrInvalid]; database errors are returned wrapped.
func (s *Store) Write(ctx context.Context, id, data string, tok Token) error {
	if err := s.checkArgs(id); err != nil {
		return err
	}
	if tok == 0 || tok > math.MaxInt64 {
		return invalid("write %q with token %d (want 1 to 2^63-1)", id, tok)
	}
	res, err := s.db.ExecContext(ctx, writeSQL, id, data, int64(tok))
	if err != nil {
		return fmt.Errorf("fencing: write %q: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("fencing: write %q: %w", id, err)
	}
	if n > 0 {
		return nil
	}
	// Rejected. Read the newest token back for the message only: it may have
	// grown again since, but the rejection itself was atomic.
	_, last, err := s.Read(ctx, id)
	if err != nil {
		return fmt.Errorf("%w: write %q with token %d refused", ErrStaleToken, id, tok)
	}
	return fmt.Errorf("%w: write %q with token %d refused: it has seen token %d", ErrStaleToken, id, tok, last)
}

// Read returns the data of resource id and the newest token it accepted.
// A resource never written reads as "" with token 0. An empty id returns an
// error wrapping [ErrInvalid].
func (s *Store) Read(ctx context.Context, id string) (data string, last Token, err error) {
	if err := s.checkArgs(id); err != nil {
		return "", 0, err
	}
	var tok int64
	err = s.db.QueryRowContext(ctx, readSQL, id).Scan(&data, &tok)
	if errors.Is(err, sql.ErrNoRows) {
		return "", 0, nil
	}
	if err != nil {
		return "", 0, fmt.Errorf("fencing: read %q: %w", id, err)
	}
	return data, Token(tok), nil
}

// Close closes the database if [OpenStore] opened it; a Store made by
// [NewStore] leaves its db open. After Close, the Store's methods return
// errors.
func (s *Store) Close() error {
	if s == nil {
		return invalid("nil *Store")
	}
	if !s.own {
		return nil
	}
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("fencing: close store: %w", err)
	}
	return nil
}

func (s *Store) checkArgs(id string) error {
	switch {
	case s == nil || s.db == nil:
		return invalid("nil *Store (use OpenStore or NewStore)")
	case id == "":
		return invalid("empty resource id")
	}
	return nil
}
