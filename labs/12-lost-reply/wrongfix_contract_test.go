package lab12_test

import (
	"strings"

	"github.com/locklab/locklab/labs"
)

// contractWrongFixes are wrong fixes of the classes no lesson scenario
// looks for, caught by the contract (TestLab12_ExerciseContract): the TTL
// ignored, an error dropped. They join the lab's table.
var contractWrongFixes = []labs.WrongFix{
	{
		Name: "the hints' fix, with a lease of its own (30s) in the acquire script",
		Edits: fix(perCallID, strings.Replace(rightAcquire, `redis.call("PEXPIRE", KEYS[1], ARGV[2])`,
			`redis.call("PEXPIRE", KEYS[1], 30000)`, 1), rightRelease),
		Caught: "the TTL it is given must be the TTL in Redis",
	},
	{
		Name: "the hints' fix, but the script's error dropped: a refused call answers 0",
		Edits: fix(`id := rand.Text()
	keys := []string{m.key, "{" + m.key + "}:r:" + id}
	n, _ := script.Run(ctx, m.client, keys, string(owner), m.ttl.Milliseconds(), id).Int()
	return n, nil`, rightAcquire, rightRelease),
		Caught: "an error from Redis must surface",
	},
}

func init() { wrongFixes = append(wrongFixes, contractWrongFixes...) }
