package pglock_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/locklab/locklab/internal/rig"
	"github.com/locklab/locklab/internal/sysclient"
)

// dsn is the connection URL of the PostgreSQL server the package's tests
// and Examples share; tests that pause, kill or partition it start their
// own.
var dsn string

// server is that shared server, for PgBouncer in front of it.
var server *rig.Postgres

func TestMain(m *testing.M) {
	rig.MainWith(m,
		func() (*rig.Postgres, error) { return rig.NewPostgres(context.Background()) },
		func(p *rig.Postgres) { server, dsn = p, p.DSN(p.Addr()) })
}

var keySeq atomic.Int64

func lockKey(t testing.TB) string { return fmt.Sprintf("%s/%d", t.Name(), keySeq.Add(1)) }

// pool returns a pool to url (the shared server by default), closed when
// the test ends.
func pool(t testing.TB, url ...string) *pgxpool.Pool {
	t.Helper()
	u := dsn
	if len(url) > 0 {
		u = url[0]
	}
	p, err := sysclient.Postgres(context.Background(), u, 8)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}
