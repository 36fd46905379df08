package lab04_test

import (
	"strings"

	"github.com/locklab/locklab/labs"
)

// contractWrongFixes are wrong fixes of the classes no lesson scenario
// looks for, caught by the contract (TestLab04_ExerciseContract): a key
// deleted and written back with the same value (no script needed), an
// error dropped. They join the lab's table.
var contractWrongFixes = []labs.WrongFix{
	{
		Name: "GETDEL in one step, and the key written back with its PTTL when it was not ours",
		Edits: release(`var pttl *redis.DurationCmd
	var get *redis.StringCmd
	m.hook(ctx, naive.HookAfterGetMatch)
	_, err := m.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		pttl = p.PTTL(ctx, m.key)
		get = p.GetDel(ctx, m.key)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	if got := get.Val(); got != tok {
		if got != "" { // someone else's: put it back as it was
			if err := m.client.Set(ctx, m.key, got, pttl.Val()).Err(); err != nil {
				return err
			}
		}
		return ErrNotHeld
	}
	return nil`),
		Caught: "It was deleted and written back",
	},
	{
		Name: "the right fix, but an error from EXEC dropped: Unlock says released",
		Edits: release(strings.Replace(watched(`return ErrNotHeld`), "\n\treturn err", `
	if errors.Is(err, ErrNotHeld) {
		return err
	}
	return nil // any other error: released, as far as we can tell`, 1)),
		Caught: "Unlock returned nil while Redis refused its write",
	},
}

func init() { wrongFixes = append(wrongFixes, contractWrongFixes...) }
