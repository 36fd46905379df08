package lab05_test

import "github.com/locklab/locklab/labs"

// contractWrongFixes are wrong fixes of the classes no lesson scenario
// looks for, caught by the contract (TestLab05_ExerciseContract): the TTL
// ignored by the renewal. They join the lab's table.
var contractWrongFixes = []labs.WrongFix{
	{
		Name: "the right fix, but each renewal to a lease of its own (30s)",
		Edits: renewal(`		n, err := m.client.Eval(context.Background(), ` + script + `, []string{m.key}, tok, 30000).Int()
		if err == nil && n == 0 {
			return
		}`),
		Caught: "a renewal renews to the TTL it is given",
	},
}

func init() { wrongFixes = append(wrongFixes, contractWrongFixes...) }
