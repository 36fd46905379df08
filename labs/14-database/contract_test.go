package lab14_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/locklab/locklab/internal/rig"
	"github.com/locklab/locklab/internal/sysclient"
	"github.com/locklab/locklab/labs"
	lab14 "github.com/locklab/locklab/labs/14-database"
	"github.com/locklab/locklab/pglock"
)

// The contract of a writer, besides the lesson (labs.ExerciseWriterContract):
// ShipOrder's writes land while the worker holds the row lock, with the
// status and the token it is given (as its transaction sees them); once
// the server has ended the lock's session they return an error and change
// nothing; with a cancelled context they are not made; and what a worker
// wrote stays once it has unlocked.

// rowWriter is the contract of ship on one PostgreSQL server, started
// with the first hold.
func rowWriter(ship func(context.Context, lab14.Orders, lab14.Orders, string, uint64) error) labs.WriterContract {
	var (
		once      sync.Once
		app, lock *pgxpool.Pool
	)
	return labs.WriterContract{
		Store: "order 1001",
		Name:  "ShipOrder",
		Hold: func(t testing.TB) labs.Hold {
			once.Do(func() {
				p := rig.StartPostgres(labs.QuietT(t))
				var err error
				if app, err = sysclient.Postgres(context.Background(), p.DSN(p.Addr()), 4); err != nil {
					t.Fatalf("postgres pool: %v", err)
				}
				t.Cleanup(app.Close)
				// A write that waits for the worker's own row lock is let
				// go once the server ends the lock's session.
				if lock, err = sysclient.Postgres(context.Background(), p.DSN(p.Addr())+"&idle_in_transaction_session_timeout="+ms(idleInTx), 4); err != nil {
					t.Fatalf("postgres pool: %v", err)
				}
				t.Cleanup(lock.Close)
				if err := lab14.Setup(context.Background(), app); err != nil {
					t.Fatalf("orders table: %v", err)
				}
			})
			m := pglock.NewRow(lock, "order:"+order)
			if err := m.Lock(t.Context()); err != nil {
				t.Fatalf("row lock: %v", err)
			}
			return &rowHold{app: app, m: m, pid: m.PID(), ship: ship}
		},
	}
}

type rowHold struct {
	app  *pgxpool.Pool
	m    *pglock.RowMutex
	pid  uint32
	ship func(context.Context, lab14.Orders, lab14.Orders, string, uint64) error
}

func (h *rowHold) Write(ctx context.Context, data string) error {
	tx := h.m.Tx()
	if tx == nil {
		return errors.New("lab14: the contract writes without holding the lock")
	}
	return h.ship(ctx, lab14.Orders{DB: tx}, lab14.Orders{DB: h.app}, data, h.m.Fence())
}

// Read reads order 1001 as the lock's transaction sees it while it lives,
// else as the database has it.
func (h *rowHold) Read(ctx context.Context) (string, error) {
	if tx := h.m.Tx(); tx != nil {
		if status, tok, err := (lab14.Orders{DB: tx}).Read(ctx, order); err == nil {
			return fmt.Sprintf("%s, token %d", status, tok), nil
		}
	}
	status, tok, err := lab14.Orders{DB: h.app}.Read(ctx, order)
	return fmt.Sprintf("%s, token %d", status, tok), err
}

func (h *rowHold) Want(data string) string { return fmt.Sprintf("%s, token %d", data, h.m.Fence()) }

// Lose ends the lock's session, as idle_in_transaction_session_timeout
// does for a worker paused past it, and waits until it is gone.
func (h *rowHold) Lose(ctx context.Context) error {
	if _, err := h.app.Exec(ctx, `SELECT pg_terminate_backend($1)`, int(h.pid)); err != nil {
		return err
	}
	for {
		var n int
		if err := h.app.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE pid = $1`, int(h.pid)).Scan(&n); err != nil || n == 0 {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

func (h *rowHold) Release(ctx context.Context) error {
	if err := h.m.Unlock(ctx); err != nil && !errors.Is(err, pglock.ErrNotHeld) {
		return err
	}
	return nil
}

func TestLab14_ExerciseContract(t *testing.T) {
	t.Parallel()
	labs.ExerciseWriterContract(t, titleRow, rowWriter(lab14.ShipOrder))
}

func TestLab14_FixedContract(t *testing.T) {
	t.Parallel()
	labs.FixedWriterContract(t, titleRow, rowWriter(viaLock))
}
