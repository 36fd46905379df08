package rig_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/locklab/locklab/internal/rig"
)

// TestPgBouncer starts PgBouncer in each pool mode in front of one server:
// a client gets through it to PostgreSQL, the pool mode is the one asked
// for (PgBouncer's admin console says so, and statement pooling refuses a
// transaction block), make strays would find the process, and Close
// leaves none behind.
func TestPgBouncer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pg := rig.StartPostgres(t)
	for _, mode := range []string{rig.PoolSession, rig.PoolTransaction, rig.PoolStatement} {
		t.Run(mode, func(t *testing.T) {
			b, err := rig.NewPgBouncer(ctx, pg, mode, rig.WithPgBouncerPoolSize(2))
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			pid := b.Pid()
			wantListed(t, pid)

			c, err := pgx.Connect(ctx, b.DSN())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(ctx)
			var one int
			if err := c.QueryRow(ctx, "SELECT 1", pgx.QueryExecModeSimpleProtocol).Scan(&one); err != nil || one != 1 {
				t.Fatalf("SELECT 1 through PgBouncer = %d, %v; want 1", one, err)
			}

			admin, err := pgx.Connect(ctx, strings.Replace(b.DSN(), "/postgres?", "/pgbouncer?", 1)+"&default_query_exec_mode=simple_protocol")
			if err != nil {
				t.Fatal(err)
			}
			defer admin.Close(ctx)
			got := showConfig(t, admin, "pool_mode")
			if got != mode {
				t.Errorf("SHOW CONFIG pool_mode = %q; want %q", got, mode)
			}
			if got := showConfig(t, admin, "default_pool_size"); got != "2" {
				t.Errorf("SHOW CONFIG default_pool_size = %q; want 2", got)
			}

			_, err = c.Exec(ctx, "BEGIN; SELECT 1", pgx.QueryExecModeSimpleProtocol)
			if refused := err != nil && strings.Contains(err.Error(), "transaction blocks not allowed"); refused != (mode == rig.PoolStatement) {
				t.Errorf("BEGIN in %s pooling: %v; want refused only in statement pooling", mode, err)
			}
			closeGone(t, b, []int{pid})
		})
	}
}

// showConfig returns the value of one PgBouncer setting from its admin
// console.
func showConfig(t *testing.T, admin *pgx.Conn, key string) string {
	t.Helper()
	rows, err := admin.Query(context.Background(), "SHOW CONFIG")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		if len(vals) >= 2 && vals[0] == key {
			s, _ := vals[1].(string)
			return s
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	t.Fatalf("SHOW CONFIG has no %s", key)
	return ""
}

func TestPgBouncerBadArguments(t *testing.T) {
	ctx := context.Background()
	if _, err := rig.NewPgBouncer(ctx, nil, rig.PoolSession); err == nil {
		t.Error("NewPgBouncer(nil Postgres) = nil error; want one")
	}
	if _, err := rig.NewPgBouncer(ctx, &rig.Postgres{}, "connection"); err == nil || !strings.Contains(err.Error(), "pool mode") {
		t.Errorf(`NewPgBouncer(mode "connection") = %v; want an error naming the pool mode`, err)
	}
	if _, err := rig.NewPgBouncer(ctx, &rig.Postgres{}, rig.PoolSession, rig.WithPgBouncerSettings("no value")); err == nil {
		t.Error(`NewPgBouncer(WithPgBouncerSettings("no value")) = nil error; want one`)
	}
}
