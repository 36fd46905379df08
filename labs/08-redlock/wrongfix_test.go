package lab08_test

import (
	"testing"

	"github.com/locklab/locklab/labs"
)

// shippedTry is the shipped TryLock's body, which every fix replaces.
const shippedTry = `	tok := token.New()
	if n := m.setAll(ctx, tok); n < len(m.clients)/2+1 {
		m.releaseAll(ctx, tok) // no majority: give back the nodes we got
		return false, nil
	}
	m.hook(ctx, redlock.HookAcquiredQuorum) // a majority said OK
	// Your code here (Lab 08): the majority said OK. Is the lock still good?
	m.mu.Lock()`

// try replaces the body, and imports "fmt" for the fixes' errors.
func try(code string) []labs.Edit {
	return []labs.Edit{
		labs.Replace(shippedTry, code+"\n\tm.mu.Lock()"),
		labs.Replace("import (\n\t\"context\"\n", "import (\n\t\"context\"\n\t\"fmt\"\n"),
	}
}

// check is the validity check of step 3, given where start was read.
const check = `	elapsed := time.Since(start)
	if validity := m.ttl - elapsed - (m.ttl/100 + 2*time.Millisecond); validity <= 0 {
		m.releaseAll(ctx, tok)
		return false, fmt.Errorf("lab08: a majority answered after %v: no validity left", elapsed)
	}`

// wrongFixes are the plausible wrong fixes of exercise.go, each caught by
// one of the lab's exercise tests with a message that names it, and the
// right fix.
var wrongFixes = []labs.WrongFix{
	{
		Name: "the right fix: the clock read before the first SET, validity checked after the majority",
		Edits: try(`	tok := token.New()
	start := time.Now() // before the first SET goes out
	if n := m.setAll(ctx, tok); n < len(m.clients)/2+1 {
		m.releaseAll(ctx, tok)
		return false, nil
	}
	m.hook(ctx, redlock.HookAcquiredQuorum)
` + check),
		Right: true,
	},
	{
		Name: "the clock read when the replies are in, not before the first SET",
		Edits: try(`	tok := token.New()
	n := m.setAll(ctx, tok)
	start := time.Now() // the replies are in
	if n < len(m.clients)/2+1 {
		m.releaseAll(ctx, tok)
		return false, nil
	}
	m.hook(ctx, redlock.HookAcquiredQuorum)
` + check),
		Caught: "the time Lock took, counted from before the first SET went out",
	},
	{
		Name: "the validity measured before the last step of Lock, not after it",
		Edits: try(`	tok := token.New()
	start := time.Now()
	if n := m.setAll(ctx, tok); n < len(m.clients)/2+1 {
		m.releaseAll(ctx, tok)
		return false, nil
	}
` + check + `
	m.hook(ctx, redlock.HookAcquiredQuorum)`),
		Caught: "the time Lock took, counted from before the first SET went out",
	},
}

func TestLab08_WrongFixes(t *testing.T) { labs.WrongFixes(t, wrongFixes) }
