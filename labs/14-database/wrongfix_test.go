package lab14_test

import (
	"testing"

	"github.com/locklab/locklab/labs"
)

// shippedWrite is the shipped exercise's write.
const shippedWrite = `	return app.Write(ctx, "1001", status, token)`

// wrongFixes are the plausible wrong fixes of exercise.go, each caught by
// TestLab14_Exercise with a message that names it; the README's table
// lists the same.
var wrongFixes = []labs.WrongFix{
	{
		Name: "check the lock's transaction, then write through the pool",
		Edits: []labs.Edit{labs.Replace(shippedWrite, `	var one int
	if err := lock.DB.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		return err
	}
`+shippedWrite)},
		Caught: "older than B's token",
	},
	{
		Name: "write through the lock, and through the pool if that fails",
		Edits: []labs.Edit{labs.Replace(shippedWrite, `	if err := lock.Write(ctx, "1001", status, token); err == nil {
		return nil
	}
`+shippedWrite)},
		Caught: "older than B's token",
	},
	{
		Name: "write through the lock, and through the pool as well",
		// B's pool write waits for the row B's own lock transaction
		// locked: the message must say so, not print an error chain.
		Edits: []labs.Edit{labs.Replace(shippedWrite, `	if err := lock.Write(ctx, "1001", status, token); err != nil {
		return err
	}
`+shippedWrite)},
		Caught: "waits for the order's row, which B's own lock transaction",
	},
	{
		Name: "write through the lock, and report success when that fails",
		Edits: []labs.Edit{labs.Replace(shippedWrite, `	if err := lock.Write(ctx, "1001", status, token); err != nil {
		return nil // the lock is gone: nothing to write
	}
	return nil`)},
		Caught: "A's ShipOrder returned nil, but order 1001 does not hold",
	},
	{
		// A hurried learner's: the write in the lock's transaction, the
		// token left out.
		Name:   "write through the lock with token 0",
		Edits:  []labs.Edit{labs.Replace(shippedWrite, `	return lock.Write(ctx, "1001", status, 0)`)},
		Caught: "or it wrote something else than it was given",
	},
	{
		// The context class: the write ignores the ctx it is given.
		Name:   "write through the lock on context.Background()",
		Edits:  []labs.Edit{labs.Replace(shippedWrite, `	return lock.Write(context.Background(), "1001", status, token)`)},
		Caught: `wrote "cancelled" with its context cancelled`,
	},
	{
		// One nobody listed: the lock's write, and when it fails, the
		// row's token read and compared in Go before a write through
		// the pool. Between the read and the write, the next holder
		// writes: only an ordering the scenario does not force shows it.
		Name: "write through the lock, or through the pool after comparing the row's token in Go",
		Edits: []labs.Edit{labs.Replace(shippedWrite, `	if err := lock.Write(ctx, "1001", status, token); err == nil {
		return nil
	}
	_, last, err := app.Read(ctx, "1001")
	if err != nil {
		return err
	}
	if last >= token {
		return ErrStale
	}
	return app.Write(ctx, "1001", status, token)`)},
		Caught: "older than B's token",
	},
}

func TestLab14_WrongFixes(t *testing.T) { labs.WrongFixes(t, wrongFixes) }
