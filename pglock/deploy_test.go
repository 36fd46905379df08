package pglock_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/locklab/locklab/internal/leakcheck"
	"github.com/locklab/locklab/internal/locktest"
	"github.com/locklab/locklab/internal/rig"
	"github.com/locklab/locklab/pglock"
)

// The deployments users have: PgBouncer in front of the server, each
// isolation level as the server's default, statement_timeout and
// lock_timeout set, a pool of pgx's default size. Each test is the
// regression test of a finding of issue 34.

// defaultPool returns a pool to url on pgx's defaults (MaxConns
// max(4, CPUs), statements prepared and cached), as users make them,
// closed when the test ends.
func defaultPool(t testing.TB, url string) *pgxpool.Pool {
	t.Helper()
	p, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// TestPgBouncer: through PgBouncer, on pgx's default options. In
// transaction pooling with one server connection, a session advisory lock
// taken outside a transaction stays on a server session that PgBouncer
// then hands to another client, whose pg_try_advisory_lock succeeds on it
// re-entrantly: two holders (issue 34). Both locks must exclude in session
// and transaction pooling (a waiter that gives up leaves nothing behind
// in the pooler), and refuse statement pooling with an error that says
// why, leaving nothing held.
func TestPgBouncer(t *testing.T) {
	for _, mode := range []string{rig.PoolTransaction, rig.PoolSession, rig.PoolStatement} {
		t.Run(mode, func(t *testing.T) {
			size := 2 // two server connections: a transaction pooler hands them to everyone
			if mode == rig.PoolSession {
				size = 8 // a session pooler keeps one per client connection
			}
			b := rig.StartPgBouncer(t, server, mode, rig.WithPgBouncerPoolSize(size))
			for _, k := range kinds {
				t.Run(k.Name, func(t *testing.T) {
					leakcheck.Guard(t)
					ctx := context.Background()
					key := lockKey(t)
					pa, pb := defaultPool(t, b.DSN()), defaultPool(t, b.DSN())
					a, c := lock(k, pa, key), lock(k, pb, key)
					direct := lock(k, pool(t), key)
					if mode == rig.PoolStatement {
						err := a.Lock(ctx)
						if err == nil || !strings.Contains(err.Error(), "statement pooling") {
							t.Errorf("Lock through statement pooling = %v; want an error that names statement pooling", err)
						}
						if err == nil {
							_ = a.Unlock(ctx)
						}
						getsTheLock(t, ctx, direct)
						return
					}
					if err := a.Lock(ctx); err != nil {
						t.Fatal(err)
					}
					if ok, err := c.TryLock(ctx); ok || err != nil {
						t.Errorf("c.TryLock while a holds = %v, %v; want false, nil (two holders)", ok, err)
						if ok {
							_ = c.Unlock(ctx)
						}
					}
					if ok, err := direct.TryLock(ctx); ok || err != nil {
						t.Errorf("a client connected directly: TryLock while a holds = %v, %v; want false, nil", ok, err)
						if ok {
							_ = direct.Unlock(ctx)
						}
					}
					// c gives up while it waits: its connection is closed, and
					// the pooler must not keep its lock statement alive on a
					// server session, to be granted once a unlocks.
					gctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
					if err := c.Lock(gctx); !errors.Is(err, pglock.ErrNotObtained) {
						t.Errorf("c.Lock giving up while a holds = %v; want ErrNotObtained", err)
					}
					cancel()
					if err := a.Unlock(ctx); err != nil {
						t.Fatalf("a.Unlock = %v; want nil", err)
					}
					getsTheLock(t, ctx, direct)

					locks := []locktest.Locker{a, c, lock(k, pa, key)}
					most, total, err := locktest.Turns(ctx, locks, 15, 0)
					if err != nil {
						t.Fatal(err)
					}
					if most != 1 {
						t.Errorf("most holders at once through %s pooling = %d in %d holds; want 1", mode, most, total)
					}
					getsTheLock(t, ctx, direct)
				})
			}
		})
	}
}

// isolationLevels are the values of default_transaction_isolation.
var isolationLevels = []string{"read committed", "repeatable read", "serializable"}

// TestRowIsolationLevels: each holder of a row lock appends the next entry
// to a ledger through Tx (read the last entry, write the next). With the
// server's default isolation at repeatable read or serializable, the
// snapshot was taken when the locking SELECT started, before the wait:
// holders missed their predecessors' entries (96 distinct of 100) or
// failed to serialize (58 of 100). Every level must give 100 of 100.
func TestRowIsolationLevels(t *testing.T) {
	p := pool(t)
	ctx := context.Background()
	if _, err := p.Exec(ctx, `CREATE TABLE IF NOT EXISTS pglock_ledger (key text, n int, PRIMARY KEY (key, n))`); err != nil {
		t.Fatal(err)
	}
	for _, level := range isolationLevels {
		t.Run(strings.ReplaceAll(level, " ", "-"), func(t *testing.T) {
			leakcheck.Guard(t)
			key := lockKey(t)
			lp := defaultPool(t, dsn+"&default_transaction_isolation="+url.PathEscape(level))
			var got string
			if err := lp.QueryRow(ctx, "SHOW default_transaction_isolation").Scan(&got); err != nil || got != level {
				t.Fatalf("default_transaction_isolation = %q, %v; want %q", got, err, level)
			}
			const workers, holds = 4, 25
			var g errgroup.Group
			for w := range workers {
				m := pglock.NewRow(lp, key)
				g.Go(func() error {
					for h := range holds {
						if err := m.Lock(ctx); err != nil {
							return fmt.Errorf("worker %d, hold %d: Lock: %w", w, h, err)
						}
						_, err := m.Tx().Exec(ctx, `INSERT INTO pglock_ledger SELECT $1, coalesce(max(n), 0) + 1 FROM pglock_ledger WHERE key = $1`, key)
						if uerr := m.Unlock(ctx); err == nil && uerr != nil {
							err = uerr
						}
						if err != nil {
							return fmt.Errorf("worker %d, hold %d: append: %w", w, h, err)
						}
					}
					return nil
				})
			}
			if err := g.Wait(); err != nil {
				t.Error(err)
			}
			var n, distinct int
			if err := p.QueryRow(ctx, `SELECT count(*), count(DISTINCT n) FROM pglock_ledger WHERE key = $1 AND n BETWEEN 1 AND $2`, key, workers*holds).Scan(&n, &distinct); err != nil {
				t.Fatal(err)
			}
			if distinct != workers*holds {
				t.Errorf("ledger at %s: %d entries, %d distinct of 1..%d; want all %d", level, n, distinct, workers*holds, workers*holds)
			}
		})
	}
}

// waitingFor returns how many server sessions wait for a lock while
// running a statement whose text holds what (a key).
func waitingFor(t testing.TB, p *pgxpool.Pool, what string) int {
	t.Helper()
	var n int
	err := p.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND strpos(query, $1) > 0`, what).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSmallPool: a holder's own work takes a connection from the same
// pool as the locks' waiters. With pgx's default pool (4 connections here)
// and each waiting Lock holding a connection, three waiters left the
// holder none: its pool.Exec waited until its context ended. The waiters
// must leave the holder a connection.
func TestSmallPool(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.Name, func(t *testing.T) {
			leakcheck.Guard(t)
			ctx := context.Background()
			key := lockKey(t)
			p := defaultPool(t, dsn)
			maxConns := int(p.Config().MaxConns)
			holder := lock(k, p, key)
			if err := holder.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			waiters := maxConns
			wctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			var g errgroup.Group
			var mu sync.Mutex // guards started
			started := 0
			for range waiters {
				m := lock(k, p, key)
				g.Go(func() error {
					mu.Lock()
					started++
					mu.Unlock()
					if err := m.Lock(wctx); err != nil {
						return err
					}
					return m.Unlock(ctx)
				})
			}
			// Every waiter has called Lock, and as many as will wait in the
			// server do, a connection each: all the pool's, or the half of
			// them the waiters may take.
			locktest.Eventually(t, 10*time.Second, "the waiters wait", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return started == waiters && (p.Stat().AcquiredConns() == int32(maxConns) || waitingFor(t, pool(t), key) >= maxConns/2)
			})
			xctx, xcancel := context.WithTimeout(ctx, 3*time.Second)
			_, err := p.Exec(xctx, "SELECT 1")
			xcancel()
			if err != nil {
				t.Errorf("the holder's own pool.Exec while %d Locks wait on a pool of %d = %v; want it served", waiters, maxConns, err)
			}
			if err := holder.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			if err := g.Wait(); err != nil {
				t.Errorf("a waiter: %v", err)
			}
		})
	}
}

// TestServerTimeouts: with statement_timeout or lock_timeout set for the
// lock's sessions, a Lock that waited longer failed with SQLSTATE 57014
// or 55P03. Lock waits until it holds the lock or its context ends: the
// server's timeouts do not bound the wait. They still bound the holder's
// own statements in a row lock's transaction.
func TestServerTimeouts(t *testing.T) {
	for _, setting := range []string{"statement_timeout", "lock_timeout"} {
		for _, k := range kinds {
			t.Run(setting+"/"+k.Name, func(t *testing.T) {
				leakcheck.Guard(t)
				ctx := context.Background()
				key := lockKey(t)
				const timeout = 100 * time.Millisecond
				short := pool(t, dsn+"&"+setting+"="+fmt.Sprint(timeout.Milliseconds()))
				a, b := lock(k, pool(t), key), lock(k, short, key)
				if err := a.Lock(ctx); err != nil {
					t.Fatal(err)
				}
				got := make(chan error, 1)
				go func() { got <- b.Lock(ctx) }()
				// b waits in the server for five times the timeout.
				locktest.Eventually(t, 10*time.Second, "b waits 5x the timeout", func() bool {
					var n int
					_ = pool(t).QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND now() - query_start > $1::interval`, (5 * timeout).String()).Scan(&n)
					select {
					case err := <-got:
						got <- err
						return true
					default:
					}
					return n > 0
				})
				if err := a.Unlock(ctx); err != nil {
					t.Fatal(err)
				}
				if err := <-got; err != nil {
					t.Fatalf("b.Lock with %s=%v on its sessions = %v; want nil once a unlocked", setting, timeout, err)
				}
				if r, ok := b.(*pglock.RowMutex); ok && setting == "statement_timeout" {
					_, err := r.Tx().Exec(ctx, "SELECT pg_sleep(1)")
					if err == nil {
						t.Errorf("a 1s statement in b's Tx with statement_timeout=%v = nil; want the server's timeout (the holder's statements keep it)", timeout)
					}
				}
				if err := b.Unlock(ctx); err != nil && !(k.Name == "pglock-row" && setting == "statement_timeout" && errors.Is(err, pglock.ErrNotHeld)) {
					t.Fatal(err)
				}
			})
		}
	}
}

var _ = pgx.ErrNoRows

// TestSmallPoolHolders: as TestSmallPool, with half the pool's connections
// held by holds of the process (a worker per key, each holding its own
// lock, each with Locks of the same process waiting behind it). The
// package doc sizes the pool for the locks held at once plus the
// application's own queries, and that is what the pool has; but the
// waiting Locks took the other half, and no holder could run its own
// pool.Exec: each waited for a connection only an Unlock would free. The
// waiters must leave the holders a connection, however many holds there
// are.
func TestSmallPoolHolders(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.Name, func(t *testing.T) {
			leakcheck.Guard(t)
			ctx := context.Background()
			key := lockKey(t)
			p := defaultPool(t, dsn)
			maxConns := int(p.Config().MaxConns)
			holds := maxConns / 2
			keys := make([]string, holds)
			holders := make([]locktest.Fenced, holds)
			for i := range holds {
				keys[i] = fmt.Sprintf("%s-%c", key, 'a'+i)
				holders[i] = lock(k, p, keys[i])
				if err := holders[i].Lock(ctx); err != nil {
					t.Fatal(err)
				}
			}
			wctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			var g errgroup.Group
			var mu sync.Mutex // guards started
			started, waiters := 0, 0
			for _, kk := range keys {
				for range maxConns {
					waiters++
					m := lock(k, p, kk)
					g.Go(func() error {
						mu.Lock()
						started++
						mu.Unlock()
						if err := m.Lock(wctx); err != nil {
							return err
						}
						return m.Unlock(ctx)
					})
				}
			}
			locktest.Eventually(t, 10*time.Second, "the waiters wait", func() bool {
				mu.Lock()
				defer mu.Unlock()
				if started != waiters {
					return false
				}
				inServer := 0
				for _, kk := range keys {
					inServer += waitingFor(t, pool(t), kk)
				}
				return p.Stat().AcquiredConns() == int32(maxConns) || inServer >= max(1, maxConns-holds-1)
			})
			for i := range holders {
				xctx, xcancel := context.WithTimeout(ctx, 3*time.Second)
				_, err := p.Exec(xctx, "SELECT 1")
				xcancel()
				if err != nil {
					t.Errorf("holder %d's own pool.Exec while %d holds and %d waiting Locks share a pool of %d = %v; want it served", i, holds, waiters, maxConns, err)
				}
			}
			for _, h := range holders {
				if err := h.Unlock(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if err := g.Wait(); err != nil {
				t.Errorf("a waiter: %v", err)
			}
		})
	}
}
