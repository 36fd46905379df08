package pglock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/internal/leakcheck"
	"github.com/locklab/locklab/internal/locktest"
	"github.com/locklab/locklab/internal/rig"
	"github.com/locklab/locklab/pglock"
)

// kinds are the two locks, as the shared scenarios of internal/locktest
// see them. PostgreSQL's lock manager keeps its waiters out of sight: no
// Line.
var kinds = []locktest.Kind[*pgxpool.Pool]{
	{
		Name: "pglock", Conn: func(t *testing.T) *pgxpool.Pool { return pool(t) },
		New: func(p *pgxpool.Pool, key string, o locktest.Options) locktest.Fenced {
			return pglock.New(p, key, pglock.WithHook(o.Hook), pglock.WithObserver(o.Observer))
		},
		ErrNotHeld: pglock.ErrNotHeld, ErrNotObtained: pglock.ErrNotObtained,
	},
	{
		Name: "pglock-row", Conn: func(t *testing.T) *pgxpool.Pool { return pool(t) },
		New: func(p *pgxpool.Pool, key string, o locktest.Options) locktest.Fenced {
			return pglock.NewRow(p, key, pglock.WithHook(o.Hook), pglock.WithObserver(o.Observer))
		},
		ErrNotHeld: pglock.ErrNotHeld, ErrNotObtained: pglock.ErrNotObtained,
	},
}

// lock makes k's lock on key over p, with no options.
func lock(k locktest.Kind[*pgxpool.Pool], p *pgxpool.Pool, key string) locktest.Fenced {
	return k.New(p, key, locktest.Options{})
}

func TestInvalidArguments(t *testing.T) {
	p := pool(t)
	locktest.RefusesInvalid(t, pglock.ErrInvalid, map[string]locktest.Locker{
		"advisory nil pool":   pglock.New(nil, "k"),
		"advisory empty key":  pglock.New(p, ""),
		"advisory zero value": &pglock.Mutex{},
		"row nil pool":        pglock.NewRow(nil, "k"),
		"row empty key":       pglock.NewRow(p, ""),
		"row empty table":     pglock.NewRow(p, "k", pglock.WithTable("")),
		"row zero value":      &pglock.RowMutex{},
	}, nil)
}

// TestInvalidArgumentsInOneShape: a lock made with several bad arguments
// reports the first, in the one shape every lock package uses (the
// options first, then the pool and the key), the package named once.
func TestInvalidArgumentsInOneShape(t *testing.T) {
	tests := []struct {
		name string
		l    locktest.Locker
		want string
	}{
		{"row: empty table, nil pool, empty key", pglock.NewRow(nil, "", pglock.WithTable("")), `pglock: invalid argument: WithTable(""): empty table name`},
		{"advisory: nil pool, empty key", pglock.New(nil, ""), "pglock: invalid argument: nil pool"},
		{"advisory: not made by New", &pglock.Mutex{}, "pglock: invalid argument: Mutex not made by New"},
		{"advisory: nil", (*pglock.Mutex)(nil), "pglock: invalid argument: Mutex not made by New"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.l.Lock(context.Background()); err == nil || err.Error() != tt.want {
				t.Errorf("Lock() = %v; want %q", err, tt.want)
			}
		})
	}
}

// TestBasics runs, for each kind, the scenarios every lock on a system
// keeps, from internal/locktest: one holder and growing fences, a Lock
// that gives up while the server makes it wait leaving no waiter behind
// that would take the lock when the holder releases, the observer,
// contention.
func TestBasics(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.Name, func(t *testing.T) { locktest.Run(t, k, lockKey) })
	}
}

// TestRowWorkCommitsWithUnlock: what the holder writes through Tx is
// visible to others only once Unlock has committed it.
func TestRowWorkCommitsWithUnlock(t *testing.T) {
	leakcheck.Guard(t)
	p := pool(t)
	ctx := context.Background()
	key := lockKey(t)
	if _, err := p.Exec(ctx, `CREATE TABLE IF NOT EXISTS row_work (id text PRIMARY KEY, status text)`); err != nil {
		t.Fatal(err)
	}
	m := pglock.NewRow(p, key)
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Tx().Exec(ctx, `INSERT INTO row_work VALUES ($1, 'shipped')`, key); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := p.QueryRow(ctx, `SELECT count(*) FROM row_work WHERE id = $1`, key).Scan(&n); err != nil || n != 0 {
		t.Fatalf("rows seen by others before Unlock = %d, %v; want 0", n, err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.QueryRow(ctx, `SELECT count(*) FROM row_work WHERE id = $1`, key).Scan(&n); err != nil || n != 1 {
		t.Fatalf("rows after Unlock = %d, %v; want 1", n, err)
	}
	if m.Tx() != nil {
		t.Error("Tx() after Unlock is not nil")
	}
	// Giving up the work: roll back, and Unlock says not held.
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Tx().Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Unlock(ctx); !errors.Is(err, pglock.ErrNotHeld) {
		t.Errorf("Unlock after a rollback = %v; want ErrNotHeld", err)
	}
}

// TestIdleTimeoutEndsHold: a holder that does nothing for longer than
// the server's idle timeout has its session ended: the lock goes to the
// next client, and for a row lock the holder's work is rolled back and its
// next statement fails. The holder's Unlock says ErrNotHeld.
func TestIdleTimeoutEndsHold(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.Name, func(t *testing.T) {
			leakcheck.Guard(t)
			setting := "idle_session_timeout"
			if k.Name == "pglock-row" {
				setting = "idle_in_transaction_session_timeout"
			}
			ctx := context.Background()
			key := lockKey(t)
			short := pool(t, dsn+"&"+setting+"=300")
			a, b := lock(k, short, key), lock(k, pool(t), key)
			if err := a.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			if err := b.Lock(ctx); err != nil { // waits until the server ends a's session
				t.Fatal(err)
			}
			t.Logf("b got the lock %v after a went idle", time.Since(start).Round(time.Millisecond))
			if k.Name == "pglock-row" {
				if _, err := a.(*pglock.RowMutex).Tx().Exec(ctx, `SELECT 1`); err == nil {
					t.Error("a's transaction still works after the server ended its session")
				}
			}
			if err := a.Unlock(ctx); !errors.Is(err, pglock.ErrNotHeld) {
				t.Errorf("a.Unlock after the server ended its session = %v; want ErrNotHeld", err)
			}
			if err := b.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// partitioned runs scenario in parallel with the other tests, for each
// kind, on a server of its own with a fault proxy in front: a, on one
// key, reaches the server through the proxy, b directly.
func partitioned(t *testing.T, scenario func(t *testing.T, proxy *faultproxy.Proxy, a, b locktest.Fenced)) {
	t.Parallel() // no leakcheck.Guard: other tests run meanwhile; TestMain checks for leaks
	srv := rig.StartPostgres(t)
	proxy := faultproxy.Start(t, srv.Addr())
	for _, k := range kinds {
		t.Run(k.Name, func(t *testing.T) {
			key := lockKey(t)
			scenario(t, proxy, lock(k, pool(t, srv.DSN(proxy.Addr())), key), lock(k, pool(t, srv.DSN(srv.Addr())), key))
		})
	}
}

// getsTheLock waits until l gets the lock, 10s at most, and unlocks it.
func getsTheLock(t *testing.T, ctx context.Context, l locktest.Locker) {
	t.Helper()
	locktest.Eventually(t, 10*time.Second, "the next client gets the lock", func() bool {
		ok, err := l.TryLock(ctx)
		return ok && err == nil
	})
	_ = l.Unlock(ctx)
}

// TestPartitionedHolderKeepsLock: a holder cut off by the network keeps its
// lock as long as the server sees the connection open: there is no lease.
// When the connection is reset, the server ends the session and the lock
// is free at once.
func TestPartitionedHolderKeepsLock(t *testing.T) {
	partitioned(t, func(t *testing.T, proxy *faultproxy.Proxy, a, b locktest.Fenced) {
		ctx := context.Background()
		if err := a.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		proxy.Blackhole()
		wctx, cancel := context.WithTimeout(ctx, time.Second)
		err := b.Lock(wctx)
		cancel()
		if !errors.Is(err, pglock.ErrNotObtained) {
			t.Fatalf("b.Lock while a is cut off = %v; want ErrNotObtained (a keeps the lock)", err)
		}
		proxy.Reset()
		start := time.Now()
		if err := b.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		t.Logf("b got the lock %v after a's connection was reset", time.Since(start).Round(time.Millisecond))
		proxy.Heal()
		if err := a.Unlock(ctx); err == nil {
			t.Error("a.Unlock after its connection was reset = nil; want an error")
		}
		if err := b.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// TestLockRequestHeldInNetwork: the lock statement is held by the
// network; the client gives up (ctx) and closes its connection. When the
// network heals, the statement reaches the server late, may be granted,
// and dies with its session: the lock is free for the next client.
func TestLockRequestHeldInNetwork(t *testing.T) {
	partitioned(t, func(t *testing.T, proxy *faultproxy.Proxy, a, b locktest.Fenced) {
		ctx := context.Background()
		if err := a.Lock(ctx); err != nil { // opens a's connection; tables exist
			t.Fatal(err)
		}
		if err := a.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		proxy.Blackhole()
		lctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		err := a.Lock(lctx)
		cancel()
		if !errors.Is(err, pglock.ErrNotObtained) {
			t.Fatalf("a.Lock with its request held = %v; want ErrNotObtained", err)
		}
		proxy.Heal()
		getsTheLock(t, ctx, b)
	})
}

func TestBackstops(t *testing.T) {
	leakcheck.Guard(t)
	p := pool(t)
	ctx := context.Background()
	id := lockKey(t)

	v := pglock.NewVersioned(p, "orders_versioned")
	_, va, err := v.Read(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	_, vb, err := v.Read(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Write(ctx, id, "refunded by A", va); err != nil {
		t.Fatalf("A's write at the version it read = %v", err)
	}
	if _, err := v.Write(ctx, id, "refunded by B", vb); !errors.Is(err, pglock.ErrConflict) {
		t.Errorf("B's write at a stale version = %v; want ErrConflict", err)
	}
	if data, ver, _ := v.Read(ctx, id); data != "refunded by A" || ver != va+1 {
		t.Errorf("record = %q at version %d; want A's at %d", data, ver, va+1)
	}

	o := pglock.NewOnce(p, "refunds_once")
	if err := o.Do(ctx, id, "A"); err != nil {
		t.Fatal(err)
	}
	if err := o.Do(ctx, id, "B"); !errors.Is(err, pglock.ErrDuplicate) {
		t.Errorf("second Do = %v; want ErrDuplicate", err)
	}
	if by, err := o.By(ctx, id); by != "A" || err != nil {
		t.Errorf("By = %q, %v; want A", by, err)
	}
	if err := pglock.NewOnce(nil, "x").Do(ctx, "k", "A"); !errors.Is(err, pglock.ErrInvalid) {
		t.Errorf("Do on a nil db = %v; want ErrInvalid", err)
	}
}

// TestUnlockReplyLost: the release (COMMIT, pg_advisory_unlock) is sent
// into a partition and gets no answer within Unlock's 2s; Unlock returns
// the error and closes the connection, and once the network heals the
// server ends that session and the lock is free for the next client.
func TestUnlockReplyLost(t *testing.T) {
	partitioned(t, func(t *testing.T, proxy *faultproxy.Proxy, a, b locktest.Fenced) {
		ctx := context.Background()
		if err := a.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		proxy.Blackhole()
		if err := a.Unlock(ctx); err == nil || errors.Is(err, pglock.ErrNotHeld) {
			t.Fatalf("Unlock into a partition = %v; want a transport error", err)
		}
		if a.Fence() != 0 {
			t.Error("the lock still reports a hold after its connection was closed")
		}
		proxy.Heal()
		getsTheLock(t, ctx, b)
	})
}
