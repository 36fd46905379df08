package lab03_test

import "github.com/locklab/locklab/labs"

// putBack is a release that takes the key with GETDEL and, when it held
// another client's token, writes it back with the PTTL it had: the value
// is the same afterwards, so a check that compares values sees nothing.
const putBack = `	var pttl *redis.DurationCmd
	var get *redis.StringCmd
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
	return nil`

// contractWrongFixes are wrong fixes of the classes no lesson scenario
// looks for, caught by the contract (TestLab03_ExerciseContract): a key
// deleted and written back with the same value, an error dropped. They
// join the lab's table.
var contractWrongFixes = []labs.WrongFix{
	{
		Name: "the right fix: the release script, ErrNotHeld when it deleted nothing",
		Edits: release(`	n, err := m.client.Eval(ctx, "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0",
		[]string{m.key}, tok).Int()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil`),
		Right: true,
	},
	{
		Name:   "GETDEL, and the key written back with its PTTL when it was not ours",
		Edits:  release(putBack),
		Caught: "It was deleted and written back",
	},
	{
		Name: "the release script, but its error taken for \"not held\"",
		Edits: release(`	n, _ := m.client.Eval(ctx, "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0",
		[]string{m.key}, tok).Int()
	if n == 0 {
		return ErrNotHeld
	}
	return nil`),
		Caught: "an error from Redis must surface as itself",
	},
}

func init() { wrongFixes = append(wrongFixes, contractWrongFixes...) }
