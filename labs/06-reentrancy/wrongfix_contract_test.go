package lab06_test

import (
	"strings"

	"github.com/locklab/locklab/labs"
)

// inProcess keeps the count in the Exercise value, in a map by owner, and
// leaves the shipped scripts (one holder, no count) to Redis: the inner
// Unlock only counts down in Go.
var inProcess = []labs.Edit{
	labs.Replace("\t\"fmt\"\n", "\t\"fmt\"\n\t\"sync\"\n"),
	labs.Replace(`type Exercise struct {
	client Client
	key    string
	ttl    time.Duration
}`, `type Exercise struct {
	client Client
	key    string
	ttl    time.Duration

	mu     sync.Mutex // protects counts
	counts map[reentrant.Owner]int
}`),
	labs.Replace(`	return n > 0, nil
}`, `	if n > 0 {
		m.mu.Lock()
		if m.counts == nil {
			m.counts = map[reentrant.Owner]int{}
		}
		m.counts[owner]++
		m.mu.Unlock()
	}
	return n > 0, nil
}`),
	labs.Replace(`	n, err := releaseScript.Run(ctx, m.client, []string{m.key}, string(owner), m.ttl.Milliseconds()).Int()`, `	m.mu.Lock()
	if m.counts[owner] > 1 {
		m.counts[owner]--
		m.mu.Unlock()
		return nil
	}
	delete(m.counts, owner)
	m.mu.Unlock()
	n, err := releaseScript.Run(ctx, m.client, []string{m.key}, string(owner), m.ttl.Milliseconds()).Int()`),
}

// contractWrongFixes are wrong fixes of the classes no lesson scenario
// looks for, caught by the contract (TestLab06_ExerciseContract): the
// count kept in the Go process, the TTL ignored. They join the lab's
// table, with the right fix.
var contractWrongFixes = []labs.WrongFix{
	{
		Name:  "the right fix: a count per owner in a Redis hash",
		Edits: scripts(rightAcquire, rightRelease),
		Right: true,
	},
	{
		Name:   "the count kept in the Exercise value (a map by owner), Redis holding only who",
		Edits:  inProcess,
		Caught: "The count lives in the Go value, not in Redis",
	},
	{
		Name:   "a counted hash with a lease of its own (30s), not the one it is given",
		Edits:  scripts(strings.Replace(rightAcquire, `redis.call("PEXPIRE", KEYS[1], ARGV[2])`, `redis.call("PEXPIRE", KEYS[1], 30000)`, 1), rightRelease),
		Caught: "the TTL it is given must be the TTL in Redis",
	},
}

// leaseWrongFixes are counted hashes whose lease is set only when the
// lock is first taken (issue 35: green before TestLab06_ExerciseNestedLease),
// caught by the lease read back after a nested Lock and a partial Unlock.
var leaseWrongFixes = []labs.WrongFix{
	{
		Name: "a counted hash whose nested Lock does not renew the lease",
		Edits: scripts(`if redis.call("EXISTS", KEYS[1]) == 0 then
	redis.call("HINCRBY", KEYS[1], ARGV[1], 1)
	redis.call("PEXPIRE", KEYS[1], ARGV[2])
	return 1
end
if redis.call("HEXISTS", KEYS[1], ARGV[1]) == 1 then
	redis.call("HINCRBY", KEYS[1], ARGV[1], 1)
	return 1
end
return 0`, rightRelease),
		Caught: "after A's nested Lock, with a lease of 10s: the lease was not renewed",
	},
	{
		Name: "a counted hash whose partial Unlock does not renew the lease",
		Edits: scripts(rightAcquire, `if redis.call("HEXISTS", KEYS[1], ARGV[1]) == 0 then
	return 0
end
if redis.call("HINCRBY", KEYS[1], ARGV[1], -1) <= 0 then
	redis.call("DEL", KEYS[1])
end
return 1`),
		Caught: "after A's first Unlock, with a lease of 10s: the lease was not renewed",
	},
}

func init() {
	wrongFixes = append(wrongFixes, contractWrongFixes...)
	wrongFixes = append(wrongFixes, leaseWrongFixes...)
}
