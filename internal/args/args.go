// Package args holds the argument checks every lock package shares, so
// that a bad argument is refused the same way, in the same words, by all
// of them: every method of a lock made with one returns an error wrapping
// the package's ErrInvalid, and nothing is sent to Redis.
package args

import (
	"errors"
	"fmt"
	"reflect"
	"time"
)

// IsNil reports whether v is nil, or an interface holding a nil pointer,
// map, slice, func or channel: a *redis.Client variable never assigned,
// which would panic on first use.
func IsNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Func, reflect.Slice, reflect.Chan:
		return rv.IsNil()
	}
	return false
}

// Invalid returns an error wrapping invalid, the package's ErrInvalid, in
// the one shape every lock package uses: "<pkg>: invalid argument: <what>",
// what being format and a. A bad option names itself and its value first:
// "WithTTL(0s): ttl must be at least 1ms".
func Invalid(invalid error, format string, a ...any) error {
	return fmt.Errorf("%w: %s", invalid, fmt.Sprintf(format, a...))
}

// Apply applies opts to o in order, skipping nil ones, so that when an
// option is given twice the last wins: what each lock package's newOptions
// does over its defaults.
func Apply[O any, F ~func(*O)](o *O, opts []F) {
	for _, opt := range opts {
		if opt != nil {
			opt(o)
		}
	}
}

// Target returns the error, wrapping invalid, for the client and key a lock
// is made with: a nil client (see [IsNil]) first, then an empty key; nil
// when both will do.
func Target(invalid error, client any, key string) error {
	switch {
	case IsNil(client):
		return Invalid(invalid, "nil client")
	case key == "":
		return Invalid(invalid, "empty key")
	}
	return nil
}

// TTL returns the error, wrapping invalid, for a WithTTL(ttl) under least
// ("WithTTL(0s): ttl must be at least 1ms"); nil when ttl will do.
func TTL(invalid error, ttl, least time.Duration) error {
	if ttl < least {
		return Invalid(invalid, "WithTTL(%v): ttl must be at least %v", ttl, least)
	}
	return nil
}

// Tries returns the error, wrapping invalid, for a negative WithTries(n)
// ("WithTries(-1): tries must be at least 0"); nil when n will do.
func Tries(invalid error, n int) error {
	if n < 0 {
		return Invalid(invalid, "WithTries(%d): tries must be at least 0", n)
	}
	return nil
}

// Errs collects the errors of options that check their own value as they
// are applied, so that New can report them all, joined.
type Errs []error

// Add records err, if it is not nil.
func (e *Errs) Add(err error) {
	if err != nil {
		*e = append(*e, err)
	}
}

// Err returns the recorded errors joined, or nil if there are none.
func (e Errs) Err() error { return errors.Join(e...) }
