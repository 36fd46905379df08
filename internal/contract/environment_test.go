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
	"github.com/locklab/locklab/internal/preflight"
	"github.com/locklab/locklab/internal/rig"
	"github.com/locklab/locklab/redlock"
	"github.com/locklab/locklab/reentrant"
	"github.com/locklab/locklab/watchdog"
)

// The hazards of the environment that no script can work around, met the
// same way by every lock: Lock refuses, with the package's own sentinel,
// and takes nothing.

// Every package's ErrEviction and ErrNoScripting are one value, so a
// caller may test any of them.
func TestEnvironmentErrorsAreOneValue(t *testing.T) {
	for _, e := range [][]error{
		{preflight.ErrEviction, correct.ErrEviction, redlock.ErrEviction, watchdog.ErrEviction, fencing.ErrEviction, reentrant.ErrEviction},
		{preflight.ErrNoScripting, correct.ErrNoScripting, redlock.ErrNoScripting, watchdog.ErrNoScripting, fencing.ErrNoScripting, reentrant.ErrNoScripting},
	} {
		for _, err := range e[1:] {
			if err != e[0] {
				t.Errorf("%v is not %v", err, e[0])
			}
		}
	}
}

func TestEveryLockRefusesAnEvictingServer(t *testing.T) {
	forKinds(t, anyKind, func(t *testing.T, k kind) {
		// A managed service's usual settings, and CONFIG forbidden:
		// the check reads INFO memory.
		nodes := rig.StartN(t, k.nodes, rig.WithArgs("--maxmemory", "64mb", "--maxmemory-policy", "volatile-lru"))
		preflight.Forget()
		clients := userClients(t, nodes, "managed", "+@all", "-config")
		refused(t, k, nodes, clients, correct.ErrEviction, "maxmemory-policy volatile-lru")
	})
}

func TestEveryLockRefusesAUserWithoutScripts(t *testing.T) {
	// A Notifier's user runs the same scripts; the kind without one shows it.
	notQueued := func(k kind) bool { return !k.queued }
	forKinds(t, notQueued, func(t *testing.T, k kind) {
		nodes := rig.StartN(t, k.nodes)
		preflight.Forget()
		clients := userClients(t, nodes, "noscripts", "-@all", "+@string", "+@keyspace", "+@hash", "+@list", "+info", "+ping", "+hello", "+client")
		refused(t, k, nodes, clients, correct.ErrNoScripting, "evalsha")
	})
}

// refused checks that k's Lock and TryLock on clients fail with want, the
// message naming what, and that no node holds the key afterwards.
func refused(t *testing.T, k kind, nodes []*rig.Node, clients []*redis.Client, want error, what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if k.pipelined {
		for _, c := range clients {
			pipeline(t, c)
		}
	}
	var n any
	if k.notifier != nil {
		n = k.notifier(t, clients)
	}
	key := fmt.Sprintf("lock:env:%s", k.name)
	l := k.make(t, env{clients: clients, key: key, ttl: 5 * time.Second, hook: nil, notifier: n})
	if err := l.Lock(ctx); !errors.Is(err, want) || !containsFold(err.Error(), what) {
		t.Errorf("Lock() = %v; want %v, naming %q", err, want, what)
	}
	if ok, err := l.TryLock(ctx); ok || !errors.Is(err, want) {
		t.Errorf("TryLock() = %v, %v; want false, %v", ok, err, want)
	}
	for _, node := range nodes {
		if got := node.Client().Exists(ctx, key).Val(); got != 0 {
			t.Errorf("node %s holds %s after the refused Lock: a lock nobody was given", node.Addr(), key)
		}
	}
}

// userClients makes an ACL user with rules on every node, and returns a
// client per node logged in as that user, on go-redis's default options.
func userClients(t *testing.T, nodes []*rig.Node, user string, rules ...string) []*redis.Client {
	t.Helper()
	var out []*redis.Client
	for _, node := range nodes {
		args := []any{"ACL", "SETUSER", user, "on", ">pw", "~*", "&*"}
		for _, r := range rules {
			args = append(args, r)
		}
		if err := node.Client().Do(t.Context(), args...).Err(); err != nil {
			t.Fatal(err)
		}
		opts := rig.UserOptions(node.Addr())
		opts.Username, opts.Password = user, "pw"
		c := redis.NewClient(opts)
		t.Cleanup(func() { _ = c.Close() })
		out = append(out, c)
	}
	return out
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}
