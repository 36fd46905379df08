package lab12_test

import (
	"strings"
	"testing"

	"github.com/locklab/locklab/labs"
)

// The shipped exercise's parts, which the fixes below replace.
const (
	shippedImport = `import (
	"context"
`
	shippedRun = `return script.Run(ctx, m.client, []string{m.key}, string(owner), m.ttl.Milliseconds()).Int()`
)

// The right fix's parts, which the wrong fixes vary: a fresh id per call,
// made in Go; the receipt key in the lock key's slot; each script answers
// from its receipt first, and leaves one, with an expiry, wherever it
// changed the lock.
const (
	withRand = `import (
	"context"
	"crypto/rand"
`
	perCallID = `id := rand.Text()
	keys := []string{m.key, "{" + m.key + "}:r:" + id}
	return script.Run(ctx, m.client, keys, string(owner), m.ttl.Milliseconds(), id).Int()`
	rightAcquire = `local done = redis.call("GET", KEYS[2])
if done then
	return tonumber(done)
end
if redis.call("EXISTS", KEYS[1]) == 0 or redis.call("HEXISTS", KEYS[1], ARGV[1]) == 1 then
	redis.call("HINCRBY", KEYS[1], ARGV[1], 1)
	redis.call("PEXPIRE", KEYS[1], ARGV[2])
	redis.call("SET", KEYS[2], 1, "PX", ARGV[2])
	return 1
end
return 0`
	rightRelease = `local done = redis.call("GET", KEYS[2])
if done then
	return tonumber(done)
end
if redis.call("HEXISTS", KEYS[1], ARGV[1]) == 0 then
	return 0
end
if redis.call("HINCRBY", KEYS[1], ARGV[1], -1) > 0 then
	redis.call("PEXPIRE", KEYS[1], ARGV[2])
else
	redis.call("DEL", KEYS[1])
end
redis.call("SET", KEYS[2], 1, "PX", ARGV[2])
return 1`
)

// The right scripts' receipt lookup, which some wrong fixes move or change.
const lookup = `local done = redis.call("GET", KEYS[2])
if done then
	return tonumber(done)
end
`

// ownerCheckFirst is rightRelease with the receipt looked up after the
// owner check.
var ownerCheckFirst = strings.Replace(strings.Replace(rightRelease, lookup, "", 1),
	"\treturn 0\nend\n", "\treturn 0\nend\n"+lookup, 1)

// withTime makes a script name its receipt from TIME, inside the script.
func withTime(src string) string {
	return `local t = redis.call("TIME")
local receipt = "{" .. KEYS[1] .. "}:r:" .. t[1] .. t[2]
` + strings.ReplaceAll(src, "KEYS[2]", "receipt")
}

// inHash keeps a script's receipts as fields of the lock's hash: written
// while the hash stands, and gone when the last release deletes it.
func inHash(src string) string {
	src = strings.Replace(src, `redis.call("GET", KEYS[2])`, `redis.call("HGET", KEYS[1], "r:" .. ARGV[3])`, 1)
	src = strings.Replace(src, `	redis.call("PEXPIRE", KEYS[1], ARGV[2])
else`, `	redis.call("PEXPIRE", KEYS[1], ARGV[2])
	redis.call("HSET", KEYS[1], "r:" .. ARGV[3], 1)
else`, 1)
	src = strings.Replace(src, `redis.call("SET", KEYS[2], 1, "PX", ARGV[2])
return 1`, `return 1`, 1) // the release's own, after the else
	return strings.Replace(src, `redis.call("SET", KEYS[2], 1, "PX", ARGV[2])`, `redis.call("HSET", KEYS[1], "r:" .. ARGV[3], 1)`, 1)
}

// keepShipped, as a fix's acquire script, keeps the shipped one.
const keepShipped = ""

// fix returns the edits that make the call code run and the two scripts
// (each replaced by name: labs.ReplaceScript).
func fix(run, acquire, release string) []labs.Edit {
	edits := []labs.Edit{labs.Replace(shippedRun, run)}
	if strings.Contains(run, "rand.") {
		edits = append(edits, labs.Replace(shippedImport, withRand))
	}
	if acquire != keepShipped {
		edits = append(edits, labs.ReplaceScript("acquireScript", acquire))
	}
	return append(edits, labs.ReplaceScript("releaseScript", release))
}

// wrongFixes are the plausible wrong fixes of exercise.go, each caught by
// TestLab12_Exercise with a message that names it, and the right fix of
// the hints, which it passes.
var wrongFixes = []labs.WrongFix{
	{
		Name:  "a fresh id per call, made in Go, and a receipt in the lock key's slot (the hints' fix)",
		Edits: fix(perCallID, rightAcquire, rightRelease),
		Right: true,
	},
	{
		Name:   "an id made inside the script, from TIME: each run makes a new one",
		Edits:  fix(perCallID, withTime(rightAcquire), withTime(rightRelease)),
		Caught: "reserveStock's Unlock ran twice",
	},
	{
		Name: "one id for the owner instead of one per call: a second call answers from the first one's receipt",
		Edits: fix(`keys := []string{m.key, "{" + m.key + "}:r:" + string(owner)}
	return script.Run(ctx, m.client, keys, string(owner), m.ttl.Milliseconds()).Int()`, rightAcquire, rightRelease),
		Caught: "B was refused order 1001, which nobody holds",
	},
	{
		Name:   "a receipt on Unlock, none on Lock",
		Edits:  fix(perCallID, keepShipped, rightRelease),
		Caught: "reserveStock's Lock ran twice",
	},
	{
		Name:   "the receipt looked up after the owner check",
		Edits:  fix(perCallID, rightAcquire, ownerCheckFirst),
		Caught: `processOrder's Unlock answered "not held"`,
	},
	{
		// On a release that deletes the key, its receipt goes with it.
		Name:   "receipts kept in the lock's hash, and deleted with it",
		Edits:  fix(perCallID, inHash(rightAcquire), inHash(rightRelease)),
		Caught: `processOrder's Unlock answered "not held"`,
	},
	{
		Name: `an Unlock that treats "not held" as done, over the receipt looked up after the owner check`,
		Edits: append(fix(perCallID, rightAcquire, ownerCheckFirst), labs.Replace(`n, err := m.call(ctx, releaseScript)
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil`, `_, err := m.call(ctx, releaseScript)
	return err`)),
		Caught: "A's extra Unlock succeeded",
	},
	{
		Name:   "receipts with no expiry",
		Edits:  fix(perCallID, rightAcquire, strings.Replace(rightRelease, `redis.call("SET", KEYS[2], 1, "PX", ARGV[2])`, `redis.call("SET", KEYS[2], 1)`, 1)),
		Caught: "has no TTL",
	},
	{
		Name:   "receipt keys outside the lock key's hash slot",
		Edits:  fix(strings.Replace(perCallID, `"{" + m.key + "}:r:" + id`, `"receipt:" + id`, 1), rightAcquire, rightRelease),
		Caught: "hash slot",
	},
}

func TestLab12_WrongFixes(t *testing.T) { labs.WrongFixes(t, wrongFixes) }
