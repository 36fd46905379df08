package pglock_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/internal/locktest"
	"github.com/locklab/locklab/internal/rig"
)

// TestUserWorld runs the shared user-world fault suite over both locks, on
// pgx's default options, in each deployment users have: a direct
// connection; PgBouncer in transaction and in session pooling; each
// isolation level as the server's default; statement_timeout and
// lock_timeout set; a pool of two connections. a reaches the server (or
// PgBouncer) through a fault proxy, b directly.
//
// The suite judges a lock that ends a holder's session while it holds
// (DuringHold with Ends) by its Done, which pglock has not: PostgreSQL
// tells a session that it lost its locks only at its next statement. Those
// faults (the server SIGKILLed and restarted, the session terminated) are
// tested by name instead: TestFenceAfterCrash, TestSessionEndedWhileHolding.
//
// It is not parallel: the suite checks each fault for leaked goroutines.
func TestUserWorld(t *testing.T) {
	srv := rig.StartPostgres(t)
	deployments := []struct {
		name   string
		pooler string // a PgBouncer pool mode, or "" for none
		params url.Values
	}{
		{name: "direct"},
		{name: "pgbouncer-transaction", pooler: rig.PoolTransaction},
		{name: "pgbouncer-session", pooler: rig.PoolSession},
		{name: "repeatable-read", params: url.Values{"default_transaction_isolation": {"repeatable read"}}},
		{name: "serializable", params: url.Values{"default_transaction_isolation": {"serializable"}}},
		{name: "statement_timeout", params: url.Values{"statement_timeout": {"100"}}},
		{name: "lock_timeout", params: url.Values{"lock_timeout": {"100"}}},
		{name: "small-pool", params: url.Values{"pool_max_conns": {"2"}}},
	}
	for _, d := range deployments {
		t.Run(d.name, func(t *testing.T) {
			addr := srv.Addr()
			if d.pooler != "" {
				addr = rig.StartPgBouncer(t, srv, d.pooler).Addr()
			}
			proxy := faultproxy.Start(t, addr)
			dsnAt := func(addr string) string {
				u := rig.PostgresDSN(addr)
				if len(d.params) > 0 {
					u += "&" + strings.ReplaceAll(d.params.Encode(), "+", "%20") // pgx reads + as itself
				}
				return u
			}
			for _, k := range kinds {
				k.Conn = func(t *testing.T) *pgxpool.Pool { return defaultPool(t, dsnAt(addr)) }
				k.Waiting = func(t *testing.T, _ *pgxpool.Pool, _ string) func(context.Context) error {
					return lockWaiter(pool(t, rig.PostgresDSN(srv.Addr())))
				}
				w := locktest.World[*pgxpool.Pool]{
					Faulty:  func(t *testing.T) *pgxpool.Pool { return defaultPool(t, dsnAt(proxy.Addr())) },
					Faults:  faults(proxy, d.name == "direct" || d.pooler == rig.PoolTransaction),
					Call:    2 * time.Second,
					Recover: 10 * time.Second,
				}
				t.Run(k.Name, func(t *testing.T) { locktest.UserWorld(t, k, w, lockKey) })
			}
		})
	}
}

// faults are the faults the proxy in front of a's server makes. The
// request held past the give-up meets TryLock too only if tryHeld: its
// runs take the call's bound (2s) each, and what they test is the
// network's path (direct, or through PgBouncer in transaction pooling),
// not the server's settings, which TryLock meets under the other faults.
func faults(proxy *faultproxy.Proxy, tryHeld bool) []locktest.Fault[*pgxpool.Pool] {
	heal := func() { proxy.Heal() }
	return []locktest.Fault[*pgxpool.Pool]{
		{
			Name: "none", During: locktest.DuringLock,
			Inject: func(*testing.T, *pgxpool.Pool) func() { return func() {} },
		},
		{
			// The lock statement is sent and its reply never comes: the
			// connection is reset while the statement waits in the server.
			Name: "lock reply lost", During: locktest.DuringWait, Ends: true,
			Inject: func(*testing.T, *pgxpool.Pool) func() { proxy.Reset(); return heal },
		},
		{
			// The lock request is held in the network past a's give-up
			// (its ctx), and delivered once a has closed its connection.
			Name: "lock request held past the give-up", During: locktest.DuringLock, Ends: true, NotOnTryLock: !tryHeld,
			Inject: func(*testing.T, *pgxpool.Pool) func() { proxy.Blackhole(); return heal },
		},
		{
			Name: "connection reset at Unlock", During: locktest.DuringUnlock, Ends: true,
			Inject: func(*testing.T, *pgxpool.Pool) func() { proxy.Reset(); return heal },
		},
	}
}

// lockWaiter returns a function that blocks until a session of the
// server waits on a lock (PostgreSQL's lock manager: an advisory lock or a
// row's), as pg_stat_activity shows, or ctx ends. The user-world suite
// reads it to know that a's Lock waits behind b's hold.
func lockWaiter(p *pgxpool.Pool) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			var n int
			err := p.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'`).Scan(&n)
			if err != nil {
				return err
			}
			if n > 0 {
				return nil
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-tick.C:
			}
		}
	}
}
