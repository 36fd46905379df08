package lab09_test

import (
	"fmt"
	"testing"

	"github.com/locklab/locklab/labs"
)

// shippedUpdate is the shipped Write's unconditional UPDATE, which every
// fix below replaces.
const shippedUpdate = "	_, err := s.db.ExecContext(ctx,\n" +
	"		`UPDATE resources SET data = ?, last_fencing_token = ? WHERE id = ?`,\n" +
	"		data, int64(tok), id)\n" +
	"	return err"

// update replaces the UPDATE with code, and adds "fmt", which the fixes
// use to wrap their errors.
func update(code string) []labs.Edit {
	return []labs.Edit{
		labs.Replace(shippedUpdate, code),
		labs.Replace(`import (
	"context"
`, `import (
	"context"
	"fmt"
`),
	}
}

const conditional = "	res, err := s.db.ExecContext(ctx,\n" +
	"		`UPDATE resources SET data = ?, last_fencing_token = ? WHERE id = ? AND last_fencing_token %s ?`,\n" +
	"		data, int64(tok), id, int64(tok))\n" +
	"	if err != nil {\n" +
	"		return err\n" +
	"	}\n"

// wrongFixes are the plausible wrong fixes of exercise.go, each caught by
// one of the lab's exercise tests with a message that names it, and the
// right fix the hints lead to.
var wrongFixes = []labs.WrongFix{
	{
		Name: "the right fix: one UPDATE ... WHERE last_fencing_token < ?, zero rows changed is stale",
		Edits: update(sprintf(conditional, "<") + `	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%w: order %s has seen a newer token than %d", fencing.ErrStaleToken, id, tok)
	}
	return nil`),
		Right: true,
	},
	{
		Name: "SELECT the last token, compare in Go, then UPDATE",
		Edits: update("	var last int64\n" +
			"	if err := s.db.QueryRowContext(ctx, `SELECT last_fencing_token FROM resources WHERE id = ?`, id).Scan(&last); err != nil {\n" +
			"		return err\n" +
			"	}\n" +
			"	if int64(tok) <= last {\n" +
			"		return fmt.Errorf(\"%w: order %s has seen token %d\", fencing.ErrStaleToken, id, last)\n" +
			"	}\n" +
			"	_, err := s.db.ExecContext(ctx,\n" +
			"		`UPDATE resources SET data = ?, last_fencing_token = ? WHERE id = ?`,\n" +
			"		data, int64(tok), id)\n" +
			"	return err"),
		Caught: "older than B's token",
	},
	{
		Name: "<= instead of <: a token equal to the row's is let through",
		Edits: update(sprintf(conditional, "<=") + `	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fmt.Errorf("%w: order %s: %v", fencing.ErrStaleToken, id, err)
	}
	return nil`),
		Caught: "the same as B's token",
	},
	{
		Name: "the conditional UPDATE, but zero rows changed reported as success",
		Edits: []labs.Edit{labs.Replace(shippedUpdate, sprintf(conditional, "<")+`	_ = res // the rows changed are not looked at
	return nil`)},
		Caught: "returned nil, but the row does not hold it",
	},
	{
		Name: "a stale write refused with an error of its own, not fencing.ErrStaleToken",
		Edits: update(sprintf(conditional, "<") + `	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fmt.Errorf("lab09: stale token %d for order %s", tok, id)
	}
	return nil`),
		Caught: "must return an error wrapping fencing.ErrStaleToken",
	},
}

var sprintf = fmt.Sprintf

func TestLab09_WrongFixes(t *testing.T) { labs.WrongFixes(t, wrongFixes) }
