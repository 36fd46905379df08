package contract_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/etcdlock"
	"github.com/locklab/locklab/internal/rig"
	"github.com/locklab/locklab/internal/sysclient"
	"github.com/locklab/locklab/pglock"
	"github.com/locklab/locklab/zklock"
)

// The option contract of options_test.go, for the three lock packages on
// etcd, ZooKeeper and PostgreSQL: a bad argument is refused by Lock,
// TryLock and Unlock in the one shape ("<pkg>: invalid argument: ...", the
// package named once), and a nil Option and a nil hook mean the default.
// Each package has the options it has (no WithRetry or WithTries; pglock
// and zklock no WithTTL), so each is its own table. Each starts a server
// of its own, with the rig.

// badArg is one bad argument: a lock made with it, and the message that
// follows "<pkg>: invalid argument: ".
type badArg struct {
	name string
	l    locker
	want string
}

// refusesInOneShape checks that every method of each lock in bad returns
// an error wrapping errInvalid, in the one shape.
func refusesInOneShape(t *testing.T, pkg string, errInvalid error, bad []badArg) {
	t.Helper()
	for _, b := range bad {
		for op, err := range map[string]error{
			"Lock":    b.l.Lock(t.Context()),
			"TryLock": second(b.l.TryLock(t.Context())),
			"Unlock":  b.l.Unlock(t.Context()),
		} {
			prefix := pkg + ": invalid argument: "
			switch msg := fmt.Sprint(err); {
			case !errors.Is(err, errInvalid):
				t.Errorf("%s: %s() = %v; want %v", b.name, op, err, errInvalid)
			case !strings.HasPrefix(msg, prefix+b.want) || strings.Count(msg, pkg+":") != 1:
				t.Errorf("%s: %s() = %q; want the one shape %q, the package named once", b.name, op, msg, prefix+b.want+"...")
			}
		}
	}
}

// defaultsWork checks that l, made with a nil Option and a nil hook, locks
// and unlocks.
func defaultsWork(t *testing.T, l locker) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := l.Lock(ctx); err != nil {
		t.Fatalf("Lock() with a nil Option and a nil hook = %v; want nil", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock() = %v; want nil", err)
	}
}

func TestOptionContractSystems(t *testing.T) {
	t.Run("etcdlock", func(t *testing.T) {
		c, err := sysclient.Etcd(rig.StartEtcd(t, 1).Endpoints()...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		key := "/locklab/contract/etcdlock"
		refusesInOneShape(t, "etcdlock", etcdlock.ErrInvalid, []badArg{
			{"nil client", etcdlock.New(nil, key), "nil client"},
			{"empty key", etcdlock.New(c, ""), "empty key"},
			{"zero TTL", etcdlock.New(c, key, etcdlock.WithTTL(0)), "WithTTL(0s): "},
			{"negative TTL", etcdlock.New(c, key, etcdlock.WithTTL(-time.Second)), "WithTTL(-1s): "},
			{"TTL under a second", etcdlock.New(c, key, etcdlock.WithTTL(time.Millisecond)), "WithTTL(1ms): "},
			{"zero Mutex", new(etcdlock.Mutex), "Mutex not made by New"},
		})
		defaultsWork(t, etcdlock.New(c, key, etcdlock.Option(nil), etcdlock.WithHook(nil)))
	})
	t.Run("zklock", func(t *testing.T) {
		s, err := zklock.Connect(rig.StartZooKeeper(t, 1, rig.WithZooKeeperForTests()).Addrs(), 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		path := "/locklab/contract/zklock"
		refusesInOneShape(t, "zklock", zklock.ErrInvalid, []badArg{
			{"nil session", zklock.New(nil, path), "nil session"},
			{"empty path", zklock.New(s, ""), `path "": empty`},
			{"relative path", zklock.New(s, "locks/a"), `path "locks/a": must start with /`},
			{"zero Mutex", new(zklock.Mutex), "Mutex not made by New"},
		})
		defaultsWork(t, zklock.New(s, path, zklock.Option(nil), zklock.WithHook(nil)))
	})
	t.Run("pglock", func(t *testing.T) {
		pg := rig.StartPostgres(t)
		p, err := sysclient.Postgres(t.Context(), pg.DSN(pg.Addr()), 4)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		key := "contract/pglock"
		refusesInOneShape(t, "pglock", pglock.ErrInvalid, []badArg{
			{"nil pool", pglock.New(nil, key), "nil pool"},
			{"empty key", pglock.New(p, ""), "empty key"},
			{"NUL in key", pglock.New(p, "a\x00b"), "key holds a NUL byte"},
			{"row lock: empty table", pglock.NewRow(p, key, pglock.WithTable("")), `WithTable(""): `},
		})
		defaultsWork(t, pglock.New(p, key, pglock.Option(nil), pglock.WithHook(nil)))
		defaultsWork(t, pglock.NewRow(p, key, pglock.Option(nil), pglock.WithHook(nil)))
	})
}
