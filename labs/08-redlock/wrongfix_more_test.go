package lab08_test

import "github.com/locklab/locklab/labs"

// moreWrongFixes are wrong fixes of step 3 written in a hurry. They join
// the lab's table.
var moreWrongFixes = []labs.WrongFix{
	{
		Name: "the validity checked and the nodes given back, but no return: TryLock goes on to say true",
		Edits: try(`	tok := token.New()
	start := time.Now()
	if n := m.setAll(ctx, tok); n < len(m.clients)/2+1 {
		m.releaseAll(ctx, tok)
		return false, nil
	}
	m.hook(ctx, redlock.HookAcquiredQuorum)
	if time.Since(start) >= m.ttl {
		m.releaseAll(ctx, tok)
	}
	_ = fmt.Sprint()`),
		Caught: "the time Lock took, counted from before the first SET went out",
	},
}

func init() { wrongFixes = append(wrongFixes, moreWrongFixes...) }
