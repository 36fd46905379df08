package pglock

import (
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
)

// The first three sentinel errors have the same names and meanings in
// every locklab lock package. Errors from PostgreSQL or the network are
// never mapped to them: they are returned wrapped with the package prefix,
// the step and the key, so an outage is not mistaken for contention.
var (
	// ErrNotObtained is returned by Lock when its context ends before the
	// lock is held: the error is errors.Join(ErrNotObtained, ctx.Err()).
	// TryLock returns it, joined the same way, only when its context has
	// ended; plain contention is (false, nil).
	ErrNotObtained = errors.New("pglock: lock not obtained")

	// ErrNotHeld is returned by Unlock when the Mutex does not hold the
	// lock: it was never locked, was already unlocked, or the server ended
	// the session that held it (a timeout such as
	// idle_in_transaction_session_timeout, or an administrator), which
	// released the lock and, for a [RowMutex], rolled back its
	// transaction.
	ErrNotHeld = errors.New("pglock: lock not held")

	// ErrInvalid is wrapped by the error returned for invalid arguments: a
	// nil pool, an empty key or table name, or a Mutex not made by its
	// constructor. The constructors cannot fail, so every method returns
	// the error; nothing is sent to PostgreSQL.
	ErrInvalid = errors.New("pglock: invalid argument")

	// ErrConflict is returned by [Versioned.Write] when the row's version is
	// no longer the one the writer read: someone wrote it in between, and
	// this write changed nothing.
	ErrConflict = errors.New("pglock: version conflict")

	// ErrDuplicate is returned by [Once.Do] when the key has been recorded
	// before: the operation already ran, and this call recorded nothing.
	ErrDuplicate = errors.New("pglock: already done")
)

// sessionEnded reports whether err says the server ended the session (a
// timeout, an administrator, a shutdown): its locks are released and its
// transaction rolled back, for certain.
func sessionEnded(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	switch pe.Code {
	case "25P03", // idle_in_transaction_session_timeout
		"57P05", // idle_session_timeout
		"57P01", // admin_shutdown (pg_terminate_backend)
		"57P02", // crash_shutdown
		"57P03": // cannot_connect_now
		return true
	}
	return false
}

// lockNotAvailable reports whether err is PostgreSQL's "could not obtain
// lock" (FOR UPDATE NOWAIT found the row locked).
func lockNotAvailable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "55P03"
}

// uniqueViolation reports whether err is a unique constraint's refusal.
func uniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}
