package naive

import "errors"

var (
	// ErrNotObtained is returned by Lock when it gave up; when the context
	// ended it, the error is joined with ctx.Err().
	ErrNotObtained = errors.New("naive: lock not obtained")

	// ErrNotHeld is returned by Unlock when this lock does not hold the
	// key as far as it can tell (never locked, or already unlocked).
	ErrNotHeld = errors.New("naive: lock not held")

	// ErrInvalid wraps the error for invalid arguments: a nil client, an
	// empty key or a TTL that is not positive.
	ErrInvalid = errors.New("naive: invalid argument")
)
