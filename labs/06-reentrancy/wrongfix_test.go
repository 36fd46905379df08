package lab06_test

import (
	"testing"

	"github.com/locklab/locklab/labs"
)

// scripts returns the edits that replace both of the shipped scripts.
func scripts(acquire, release string) []labs.Edit {
	return []labs.Edit{labs.ReplaceScript("acquireScript", acquire), labs.ReplaceScript("releaseScript", release)}
}

// The right scripts' parts, which the wrong fixes vary.
const (
	rightAcquire = `if redis.call("EXISTS", KEYS[1]) == 0 or redis.call("HEXISTS", KEYS[1], ARGV[1]) == 1 then
	redis.call("HINCRBY", KEYS[1], ARGV[1], 1)
	redis.call("PEXPIRE", KEYS[1], ARGV[2])
	return 1
end
return 0`
	rightRelease = `if redis.call("HEXISTS", KEYS[1], ARGV[1]) == 0 then
	return 0
end
if redis.call("HINCRBY", KEYS[1], ARGV[1], -1) > 0 then
	redis.call("PEXPIRE", KEYS[1], ARGV[2])
else
	redis.call("DEL", KEYS[1])
end
return 1`
)

// wrongFixes are the plausible wrong fixes of exercise.go, each caught by
// TestLab06_Exercise with a message that names it.
var wrongFixes = []labs.WrongFix{
	{
		Name: "a counted hash with no TTL at all",
		Edits: scripts(`if redis.call("EXISTS", KEYS[1]) == 0 or redis.call("HEXISTS", KEYS[1], ARGV[1]) == 1 then
	redis.call("HINCRBY", KEYS[1], ARGV[1], 1)
	return 1
end
return 0`, `if redis.call("HEXISTS", KEYS[1], ARGV[1]) == 0 then
	return 0
end
if redis.call("HINCRBY", KEYS[1], ARGV[1], -1) <= 0 then
	redis.call("DEL", KEYS[1])
end
return 1`),
		Caught: "has no TTL (PTTL -1)",
	},
	{
		Name: "a release that does not check the owner holds the lock",
		Edits: scripts(rightAcquire, `if redis.call("HINCRBY", KEYS[1], ARGV[1], -1) > 0 then
	redis.call("PEXPIRE", KEYS[1], ARGV[2])
else
	redis.call("DEL", KEYS[1])
end
return 1`),
		Caught: "B's Unlock changed A's lock",
	},
	{
		Name: "an acquire that counts whoever asks",
		Edits: scripts(`redis.call("HINCRBY", KEYS[1], ARGV[1], 1)
redis.call("PEXPIRE", KEYS[1], ARGV[2])
return 1`, rightRelease),
		Caught: "both in the critical section",
	},
	{
		Name: "a count that is never deleted at zero",
		Edits: scripts(rightAcquire, `if redis.call("HEXISTS", KEYS[1], ARGV[1]) == 0 then
	return 0
end
redis.call("HINCRBY", KEYS[1], ARGV[1], -1)
redis.call("PEXPIRE", KEYS[1], ARGV[2])
return 1`),
		Caught: "A's extra Unlock succeeded",
	},
	{
		Name: "a counted acquire, but a release that frees the lock whatever the count",
		Edits: scripts(rightAcquire, `if redis.call("HEXISTS", KEYS[1], ARGV[1]) == 0 then
	return 0
end
redis.call("DEL", KEYS[1])
return 1`),
		Caught: "both in the critical section",
	},
}

func TestLab06_WrongFixes(t *testing.T) { labs.WrongFixes(t, wrongFixes) }
