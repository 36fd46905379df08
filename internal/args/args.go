// Package args holds the argument checks every lock package shares, so
// that a bad argument is refused the same way, in the same words, by all
// of them: every method of a lock made with one returns an error wrapping
// the package's ErrInvalid, and nothing is sent to Redis.
package args

import (
	"fmt"
	"reflect"
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
