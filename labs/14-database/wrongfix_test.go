package lab14_test

import (
	"os"
	"strings"
	"testing"
)

// wrongFix is a plausible wrong fix of exercise.go: edits of the shipped
// file, each old text found exactly once, and the phrase the exercise
// test's failure must contain. The README's table lists the same fixes.
type wrongFix struct {
	name   string
	edits  [][2]string
	caught string
}

// shippedWrite is the shipped exercise's write.
const shippedWrite = `	return app.Write(ctx, "1001", status, token)`

var wrongFixes = []wrongFix{
	{
		name: "check the lock's transaction, then write through the pool",
		edits: [][2]string{{shippedWrite, `	var one int
	if err := lock.DB.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		return err
	}
` + shippedWrite}},
		caught: "older than B's token",
	},
	{
		name: "write through the lock, and through the pool if that fails",
		edits: [][2]string{{shippedWrite, `	if err := lock.Write(ctx, "1001", status, token); err == nil {
		return nil
	}
` + shippedWrite}},
		caught: "older than B's token",
	},
}

// TestLab14_WrongFixesApply checks that every wrong fix in the table still
// applies to the shipped exercise.go, so the table cannot drift from it.
func TestLab14_WrongFixesApply(t *testing.T) {
	b, err := os.ReadFile("exercise.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range wrongFixes {
		src := string(b)
		for i, e := range f.edits {
			if n := strings.Count(src, e[0]); n != 1 {
				t.Errorf("wrong fix %q, edit %d: its old text occurs %d times in exercise.go; want once", f.name, i+1, n)
				continue
			}
			src = strings.Replace(src, e[0], e[1], 1)
		}
	}
}
