package lab14

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/locklab/locklab/pglock"
)

// ErrStale is returned by [Orders.WriteFenced] when the order has already
// accepted a write with a newer (or the same) token.
var ErrStale = errors.New("lab14: stale token")

// createOrders makes the orders table and order 1001's row: status "paid",
// token 0.
const createOrders = `CREATE TABLE IF NOT EXISTS orders (id text PRIMARY KEY, status text NOT NULL, token bigint NOT NULL DEFAULT 0);
INSERT INTO orders (id, status) VALUES ('1001', 'paid') ON CONFLICT (id) DO NOTHING`

// Setup creates the orders table, with order 1001 paid, in the database
// db reaches. It is safe to run twice.
func Setup(ctx context.Context, db pglock.DB) error {
	_, err := db.Exec(ctx, createOrders)
	return err
}

// Orders is the orders table as a worker reaches it, through db (the
// application's pool, or the lock's transaction).
type Orders struct{ DB pglock.DB }

// Write sets order id's status and records tok as its token, without
// comparing it with the token already there: the broken store.
func (o Orders) Write(ctx context.Context, id, status string, tok uint64) error {
	_, err := o.DB.Exec(ctx, `UPDATE orders SET status = $2, token = $3 WHERE id = $1`, id, status, int64(tok))
	return err
}

// WriteFenced sets order id's status only if tok is newer than the token
// of the last write it accepted, in one statement; otherwise it changes
// nothing and returns an error wrapping [ErrStale].
func (o Orders) WriteFenced(ctx context.Context, id, status string, tok uint64) error {
	tag, err := o.DB.Exec(ctx, `UPDATE orders SET status = $2, token = $3 WHERE id = $1 AND token < $3`, id, status, int64(tok))
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: order %s has seen a token newer than %d", ErrStale, id, tok)
	}
	return nil
}

// Read returns order id's status and token.
func (o Orders) Read(ctx context.Context, id string) (status string, tok uint64, err error) {
	var t int64
	err = o.DB.QueryRow(ctx, `SELECT status, token FROM orders WHERE id = $1`, id).Scan(&status, &t)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", 0, fmt.Errorf("lab14: no order %s", id)
	}
	return status, uint64(t), err
}
