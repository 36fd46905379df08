package pglock_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/locklab/locklab/pglock"
)

// The chapter's row lock, BEGIN; SELECT ... FOR UPDATE; work; COMMIT: the
// work is done in the lock's transaction, and commits with the release.
func ExampleRowMutex() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		panic(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS orders (id text PRIMARY KEY, status text)`); err != nil {
		panic(err)
	}

	a := pglock.NewRow(pool, "order:1001")
	b := pglock.NewRow(pool, "order:1001")
	if err := a.Lock(ctx); err != nil {
		panic(err)
	}
	fmt.Println("a locked the row")
	ok, _ := b.TryLock(ctx)
	fmt.Println("b TryLock:", ok)
	if _, err := a.Tx().Exec(ctx, `INSERT INTO orders VALUES ('1001', 'processing') ON CONFLICT (id) DO UPDATE SET status = 'processing'`); err != nil {
		panic(err)
	}
	if err := a.Unlock(ctx); err != nil { // COMMIT
		panic(err)
	}
	var status string
	_ = pool.QueryRow(ctx, `SELECT status FROM orders WHERE id = '1001'`).Scan(&status)
	fmt.Println("a committed; order 1001 is", status)
	// Output:
	// a locked the row
	// b TryLock: false
	// a committed; order 1001 is processing
}

// An advisory lock held by a session, with a fencing token from a
// sequence for the writes it protects.
func ExampleMutex() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		panic(err)
	}
	defer pool.Close()

	a := pglock.New(pool, "report:nightly")
	b := pglock.New(pool, "report:nightly")
	if err := a.Lock(ctx); err != nil {
		panic(err)
	}
	fmt.Println("a acquired")
	ok, _ := b.TryLock(ctx)
	fmt.Println("b TryLock:", ok)
	tokenA := a.Fence()
	_ = a.Unlock(ctx)
	fmt.Println("a released")
	ok, _ = b.TryLock(ctx)
	fmt.Println("b TryLock:", ok, "with a larger token:", b.Fence() > tokenA)
	_ = b.Unlock(ctx)
	// Output:
	// a acquired
	// b TryLock: false
	// a released
	// b TryLock: true with a larger token: true
}

// The chapter's double guarantee behind a lock that failed: two workers
// both believe they hold the lock for order 1002's refund. The version
// column refuses the second write, and the unique constraint refuses the
// second refund.
func ExampleVersioned() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		panic(err)
	}
	defer pool.Close()
	orders := pglock.NewVersioned(pool, "orders_v")
	refunds := pglock.NewOnce(pool, "refunds")

	_, seenByA, _ := orders.Read(ctx, "1002")
	_, seenByB, _ := orders.Read(ctx, "1002")
	_, err = orders.Write(ctx, "1002", "refunded", seenByA)
	fmt.Println("A writes at the version it read:", err)
	_, err = orders.Write(ctx, "1002", "refunded", seenByB)
	fmt.Println("B writes at the version it read:", errors.Is(err, pglock.ErrConflict))

	fmt.Println("A records the refund:", refunds.Do(ctx, "refund:1002", "A"))
	err = refunds.Do(ctx, "refund:1002", "B")
	fmt.Println("B records the refund:", errors.Is(err, pglock.ErrDuplicate))
	// Output:
	// A writes at the version it read: <nil>
	// B writes at the version it read: true
	// A records the refund: <nil>
	// B records the refund: true
}
