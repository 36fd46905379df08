package lab01_test

import "github.com/locklab/locklab/labs"

// contractWrongFixes are wrong fixes of the classes no lesson scenario
// looks for, caught by the contract (TestLab01_ExerciseContract). They
// join the lab's table, with the right fix they break.
var contractWrongFixes = []labs.WrongFix{
	{
		Name: "the right fix: one SET NX PX",
		Edits: take(`	ok, err := labs.TakeKey(ctx, m.client, m.key, tok, m.ttl)
	if err != nil || !ok {
		return false, err
	}
	m.token = tok
	m.hook(ctx, naive.HookAfterSetNX)
	return true, nil`),
		Right: true,
	},
	{
		Name: "one SET NX PX, but any error taken for \"taken\"",
		Edits: take(`	if err := m.client.SetArgs(ctx, m.key, tok, redis.SetArgs{Mode: "NX", TTL: m.ttl}).Err(); err != nil {
		return false, nil // redis.Nil: someone holds it
	}
	m.token = tok
	m.hook(ctx, naive.HookAfterSetNX)
	return true, nil`),
		Caught: "(false, nil) means taken by someone else; an error from Redis must surface",
	},
	{
		Name: "one SET NX PX, with the lease rounded to a fixed 2s",
		Edits: take(`	ok, err := m.client.SetNX(ctx, m.key, tok, 2*time.Second).Result()
	if err != nil || !ok {
		return false, err
	}
	m.token = tok
	m.hook(ctx, naive.HookAfterSetNX)
	return true, nil`),
		Caught: "the TTL it is given must be the TTL in Redis",
	},
}

func init() { wrongFixes = append(wrongFixes, contractWrongFixes...) }
