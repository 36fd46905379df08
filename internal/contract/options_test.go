package contract_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/correct"
	"github.com/locklab/locklab/fencing"
	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/naive"
	"github.com/locklab/locklab/redlock"
	"github.com/locklab/locklab/reentrant"
	"github.com/locklab/locklab/watchdog"
)

// The option contract (CONTRIBUTING.md, "The lock-package contract"), one
// table over the six lock packages: the same option means the same thing
// in each, and a bad argument is refused in one shape.

// family is one lock package, seen through the options every package
// shares. Option values travel as any, and new asserts them back.
type family struct {
	pkg                        string
	errInvalid, errNotObtained error
	new                        func(c *redis.Client, key string, opts ...any) locker
	ttl                        func(time.Duration) any
	hook                       func(func(context.Context, string)) any
	// retry and tries are nil for a package without them (naive polls at
	// a fixed interval, for ever).
	retry func() any // the package's WithRetry(nil)
	tries func(int) any
	// nilOption is a nil value of the package's Option type.
	nilOption any
}

var families = []family{
	{
		pkg: "naive", errInvalid: naive.ErrInvalid, errNotObtained: naive.ErrNotObtained,
		new: func(c *redis.Client, key string, opts ...any) locker {
			return naive.NewGetThenDelete(clientOrNil[naive.Client](c), key, as[naive.Option](opts)...)
		},
		ttl:       anyOption(naive.WithTTL),
		hook:      anyOption(naive.WithHook),
		nilOption: naive.Option(nil),
	},
	{
		pkg: "correct", errInvalid: correct.ErrInvalid, errNotObtained: correct.ErrNotObtained,
		new: func(c *redis.Client, key string, opts ...any) locker {
			return correct.New(clientOrNil[correct.Client](c), key, as[correct.Option](opts)...)
		},
		ttl:       anyOption(correct.WithTTL),
		hook:      anyOption(correct.WithHook),
		retry:     func() any { return correct.WithRetry(nil) },
		tries:     anyOption(correct.WithTries),
		nilOption: correct.Option(nil),
	},
	{
		pkg: "watchdog", errInvalid: watchdog.ErrInvalid, errNotObtained: watchdog.ErrNotObtained,
		new: func(c *redis.Client, key string, opts ...any) locker {
			return watchdog.New(clientOrNil[watchdog.Client](c), key, as[watchdog.Option](opts)...)
		},
		ttl:       anyOption(watchdog.WithTTL),
		hook:      anyOption(watchdog.WithHook),
		retry:     func() any { return watchdog.WithRetry(nil) },
		tries:     anyOption(watchdog.WithTries),
		nilOption: watchdog.Option(nil),
	},
	{
		pkg: "reentrant", errInvalid: reentrant.ErrInvalid, errNotObtained: reentrant.ErrNotObtained,
		new: func(c *redis.Client, key string, opts ...any) locker {
			return asOwner(reentrant.New(clientOrNil[reentrant.Client](c), key, as[reentrant.Option](opts)...))
		},
		ttl:       anyOption(reentrant.WithTTL),
		hook:      anyOption(reentrant.WithHook),
		retry:     func() any { return reentrant.WithRetry(nil) },
		tries:     anyOption(reentrant.WithTries),
		nilOption: reentrant.Option(nil),
	},
	{
		pkg: "redlock", errInvalid: redlock.ErrInvalid, errNotObtained: redlock.ErrNotObtained,
		new: func(c *redis.Client, key string, opts ...any) locker {
			return redlock.New([]redlock.Client{clientOrNil[redlock.Client](c)}, key, as[redlock.Option](opts)...)
		},
		ttl:       anyOption(redlock.WithTTL),
		hook:      anyOption(redlock.WithHook),
		retry:     func() any { return redlock.WithRetry(nil) },
		tries:     anyOption(redlock.WithTries),
		nilOption: redlock.Option(nil),
	},
	{
		pkg: "fencing", errInvalid: fencing.ErrInvalid, errNotObtained: fencing.ErrNotObtained,
		new: func(c *redis.Client, key string, opts ...any) locker {
			return fencing.New(clientOrNil[fencing.Client](c), key, as[fencing.Option](opts)...)
		},
		ttl:       anyOption(fencing.WithTTL),
		hook:      anyOption(fencing.WithHook),
		retry:     func() any { return fencing.WithRetry(nil) },
		tries:     anyOption(fencing.WithTries),
		nilOption: fencing.Option(nil),
	},
}

// anyOption returns with, a package's With... function, with its Option
// returned as any, as the family table carries options.
func anyOption[A, O any](with func(A) O) func(A) any {
	return func(a A) any { return with(a) }
}

// clientOrNil returns c as the package's client interface, or a nil
// interface for a nil c (a nil *redis.Client inside an interface is
// tested on its own).
func clientOrNil[C any](c *redis.Client) C {
	var zero C
	if c == nil {
		return zero
	}
	return any(c).(C)
}

// as converts option values back to the package's Option type.
func as[O any](opts []any) []O {
	out := make([]O, len(opts))
	for i, o := range opts {
		out[i] = o.(O)
	}
	return out
}

func TestOptionContract(t *testing.T) {
	node := servers[0]
	for _, f := range families {
		t.Run(f.pkg, func(t *testing.T) {
			// Every command a refused lock might send goes through p,
			// which counts them: a refused lock sends none.
			p := faultproxy.Start(t, node.Addr())
			sent := p.Count(faultproxy.Match{})
			c := node.Client(func(o *redis.Options) { o.Addr = p.Addr() })
			key := fmt.Sprintf("lock:contract:%s", f.pkg)

			bad := []struct {
				name string
				l    locker
				want string // the message after "<pkg>: invalid argument: "
			}{
				{"nil client", f.new(nil, key), "nil client"},
				{"nil *redis.Client", f.newTypedNil(nil, key), "nil client"},
				{"empty key", f.new(c, ""), "empty key"},
				{"zero TTL", f.new(c, key, f.ttl(0)), "WithTTL(0s): "},
				{"negative TTL", f.new(c, key, f.ttl(-time.Second)), "WithTTL(-1s): "},
				{"TTL under a millisecond", f.new(c, key, f.ttl(time.Microsecond)), "WithTTL(1µs): "},
			}
			if f.tries != nil {
				bad = append(bad, struct {
					name string
					l    locker
					want string
				}{"negative tries", f.new(c, key, f.tries(-1)), "WithTries(-1): "})
			}
			for _, b := range bad {
				for op, err := range map[string]error{
					"Lock":    b.l.Lock(t.Context()),
					"TryLock": second(b.l.TryLock(t.Context())),
					"Unlock":  b.l.Unlock(t.Context()),
				} {
					prefix := f.pkg + ": invalid argument: "
					switch msg := fmt.Sprint(err); {
					case !errors.Is(err, f.errInvalid):
						t.Errorf("%s: %s() = %v; want %v", b.name, op, err, f.errInvalid)
					case !strings.HasPrefix(msg, prefix+b.want) || strings.Count(msg, f.pkg+":") != 1:
						t.Errorf("%s: %s() = %q; want the one shape %q, the package named once", b.name, op, msg, prefix+b.want+"...")
					}
				}
			}
			if n := sent.Hits(); n != 0 {
				t.Errorf("the refused locks sent %d commands (%v); want none", n, sent.Caught())
			}

			// nil and zero that mean "the default": a nil Option, a nil
			// hook, a nil retry, no limit on tries.
			valid := []any{f.nilOption, f.hook(nil)}
			if f.retry != nil {
				valid = append(valid, f.retry(), f.tries(0))
			}
			l := f.new(c, key, valid...)
			if err := l.Lock(t.Context()); err != nil {
				t.Fatalf("Lock() with a nil Option, nil hook, nil retry and 0 tries = %v; want nil", err)
			}
			if f.tries != nil {
				// 0 tries is no limit: only the context ends a wait for a
				// held lock. 1 try gives up at once, the context alive.
				ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
				err := f.new(c, key, f.tries(0)).Lock(ctx)
				cancel()
				if !errors.Is(err, f.errNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("Lock() of a held lock with 0 tries = %v; want %v joined with the context's deadline", err, f.errNotObtained)
				}
				err = f.new(c, key, f.tries(1)).Lock(t.Context())
				if !errors.Is(err, f.errNotObtained) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("Lock() of a held lock with 1 try = %v; want %v, the context still alive", err, f.errNotObtained)
				}
			}
			if err := l.Unlock(t.Context()); err != nil {
				t.Fatalf("Unlock() = %v", err)
			}
		})
	}
}

// newTypedNil makes f's lock on a nil *redis.Client held in the package's
// client interface, as a variable never assigned would be.
func (f family) newTypedNil(c *redis.Client, key string) locker {
	switch f.pkg {
	case "naive":
		return naive.NewGetThenDelete(c, key)
	case "correct":
		return correct.New(c, key)
	case "watchdog":
		return watchdog.New(c, key)
	case "reentrant":
		return asOwner(reentrant.New(c, key))
	case "redlock":
		return redlock.New([]redlock.Client{c}, key)
	case "fencing":
		return fencing.New(c, key)
	}
	panic("unknown package " + f.pkg)
}

func second(_ bool, err error) error { return err }
