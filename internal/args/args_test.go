package args_test

import (
	"errors"
	"testing"

	"github.com/locklab/locklab/internal/args"
)

type client struct{}

func TestIsNil(t *testing.T) {
	var nilPtr *client
	var nilIface interface{ M() }
	for _, tt := range []struct {
		v    any
		want bool
	}{
		{nil, true}, {nilPtr, true}, {nilIface, true}, {map[string]int(nil), true}, {(func())(nil), true},
		{&client{}, false}, {client{}, false}, {0, false}, {"", false},
	} {
		if got := args.IsNil(tt.v); got != tt.want {
			t.Errorf("IsNil(%#v) = %v; want %v", tt.v, got, tt.want)
		}
	}
}

func TestInvalidHasOneShape(t *testing.T) {
	errInvalid := errors.New("pkg: invalid argument")
	err := args.Invalid(errInvalid, "WithTTL(%v): ttl must be at least 1ms", "0s")
	if !errors.Is(err, errInvalid) || err.Error() != "pkg: invalid argument: WithTTL(0s): ttl must be at least 1ms" {
		t.Errorf("Invalid = %q; want it to wrap ErrInvalid, in the shape \"pkg: invalid argument: WithTTL(0s): ...\"", err)
	}
	if err := args.Invalid(errInvalid, "100%% sure"); err.Error() != "pkg: invalid argument: 100% sure" {
		t.Errorf("Invalid with no arguments = %q", err)
	}
}
