package lab05_test

import "github.com/locklab/locklab/labs"

// exploredWrongFixes are wrong fixes that the scripted scenarios pass
// (A's watchdog meets B's token only after the pause, and a fix that looks
// at the key then sees it), caught only by the explored race
// (TestLab05_ExerciseExplored), in the orderings where the lease runs out
// at another moment, and wrong fixes caught by both. They join the lab's
// table.
var exploredWrongFixes = []labs.WrongFix{
	{
		Name: "GET, compare the token in Go, then PEXPIRE (the owner check and the renewal as two commands)",
		Edits: []labs.Edit{
			labs.Replace(`	PExpire(ctx context.Context, key string, expiration time.Duration) *redis.BoolCmd
}`, `	PExpire(ctx context.Context, key string, expiration time.Duration) *redis.BoolCmd
	Get(ctx context.Context, key string) *redis.StringCmd
}`),
			renewal(`		if v, err := m.client.Get(context.Background(), m.key).Result(); err != nil || v != tok {
			return // not ours any more: Done tells the holder
		}
		m.client.PExpire(context.Background(), m.key, m.ttl)`)[0],
		},
		Caught: "between two commands of one renewal",
	},
	{
		Name: "the owner-checked script, and on 0 the key taken back with SET NX when it is free",
		Edits: renewal(`		n, err := m.client.Eval(context.Background(), ` + script + `, []string{m.key}, tok, m.ttl.Milliseconds()).Int()
		if err == nil && n == 0 {
			if ok, _ := labs.TakeKey(context.Background(), m.client, m.key, tok, m.ttl); !ok {
				return // someone else's: Done tells the holder
			}
		}`),
		Caught: "A shipped the order after its lease ran out",
	},
	{
		Name: "the blind PEXPIRE, stopping when it answers 0 (no key), but not when the key is someone else's",
		Edits: renewal(`		if ok, err := m.client.PExpire(context.Background(), m.key, m.ttl).Result(); err == nil && !ok {
			return
		}`),
		Caught: "both in the critical section",
	},
	{
		Name: "SET key token XX PX: renewed only if the key exists, whoever holds it",
		Edits: renewal(`		if err := m.client.SetArgs(context.Background(), m.key, tok, redis.SetArgs{Mode: "XX", TTL: m.ttl}).Err(); err != nil {
			return // redis.Nil: no key any more
		}`),
		Caught: "both in the critical section",
	},
}

func init() { wrongFixes = append(wrongFixes, exploredWrongFixes...) }
