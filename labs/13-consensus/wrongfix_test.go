package lab13_test

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

// The edits start from the shipped exercise: its Done check, then its Put.
const shippedPut = `	_, err := kv.Put(ctx, OrderKey, status)
	return err`

var wrongFixes = []wrongFix{
	{
		name: "check m.Done() again right before the Put",
		edits: [][2]string{{shippedPut, `	select {
	case <-m.Done():
		return fmt.Errorf("%w: the lease is gone", ErrRefused)
	default:
	}
` + shippedPut}},
		caught: "older than B's token",
	},
	{
		name: "Get the claim, Put only if it exists",
		edits: [][2]string{{shippedPut, `	if resp, err := kv.Get(ctx, m.Claim()); err != nil || len(resp.Kvs) == 0 {
		return fmt.Errorf("%w: the claim is gone", ErrRefused)
	}
` + shippedPut}},
		caught: "older than B's token",
	},
	{
		name: "a transaction guarded by IsOwner that ignores Succeeded",
		edits: [][2]string{{shippedPut, `	_, err := kv.Txn(ctx).If(m.IsOwner()).Then(clientv3.OpPut(OrderKey, status)).Commit()
	return err`}},
		caught: "older than B's token",
	},
	{
		name: "TryLock once more before writing",
		edits: [][2]string{{shippedPut, `	if ok, err := m.TryLock(ctx); err != nil || !ok {
		return fmt.Errorf("%w: not the holder", ErrRefused)
	}
` + shippedPut}},
		caught: "the store refused B's write",
	},
}

// TestLab13_WrongFixesApply checks that every wrong fix in the table still
// applies to the shipped exercise.go, so the table cannot drift from it.
// (Each is proved caught by building the exercise test with it in place;
// see the README.)
func TestLab13_WrongFixesApply(t *testing.T) {
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
