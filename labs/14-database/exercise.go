package lab14

import "context"

// ShipOrder sets order 1001's status, as the worker that holds the row lock
// for it. lock is the lock's transaction (pglock.RowMutex.Tx), app the
// application's connection pool; both reach the same database. It returns
// nil when the status was written, and an error when it was not. Run
// `make exercise LAB=14`: it fails until a worker whose lock the server
// took away while it was frozen cannot overwrite the status the next
// holder wrote.
func ShipOrder(ctx context.Context, lock, app Orders, status string, token uint64) error {
	// Your code here (Lab 14): the row lock lives in a transaction. A
	// frozen worker's session is ended by the server after
	// idle_in_transaction_session_timeout, which releases the lock and
	// rolls the transaction back, but a write sent through the pool is
	// not in that transaction: it commits on its own when the worker
	// wakes. Make the write part of what the lock protects.
	return app.Write(ctx, "1001", status, token)
}
