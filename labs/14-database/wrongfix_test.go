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
}

func TestLab14_WrongFixes(t *testing.T) { labs.WrongFixes(t, wrongFixes) }
