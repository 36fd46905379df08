package lab08_test

import (
	"strings"

	"github.com/locklab/locklab/labs"
)

// contractWrongFixes are wrong fixes of the classes the lesson's checks
// and the contract look for: the TTL ignored. They join the lab's table.
var contractWrongFixes = []labs.WrongFix{
	{
		Name: "the right fix, but the validity counted from a lease of its own (10s), not the one it is given",
		Edits: try(`	tok := token.New()
	start := time.Now()
	if n := m.setAll(ctx, tok); n < len(m.clients)/2+1 {
		m.releaseAll(ctx, tok)
		return false, nil
	}
	m.hook(ctx, redlock.HookAcquiredQuorum)
` + strings.Replace(check, "validity := m.ttl - elapsed - (m.ttl/100", "validity := 10*time.Second - elapsed - (10*time.Second/100", 1)),
		Caught: "the time Lock took",
	},
}

func init() { wrongFixes = append(wrongFixes, contractWrongFixes...) }
