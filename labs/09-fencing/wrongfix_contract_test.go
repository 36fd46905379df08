package lab09_test

import "github.com/locklab/locklab/labs"

// staleUnlessChanged is the end of a conditional write: zero rows changed
// means the row has a newer token (or this one).
const staleUnlessChanged = `	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%w: order %s has a token newer than %d", fencing.ErrStaleToken, id, tok)
	}
	return nil`

// contractWrongFixes are wrong fixes of the classes no lesson scenario
// looks for, caught by the store's contract (TestLab09_ExerciseContract):
// tokens compared as text, the last token kept in the Go value. They join
// the lab's table.
var contractWrongFixes = []labs.WrongFix{
	{
		Name: "one conditional UPDATE, but the tokens compared as text",
		Edits: update("	res, err := s.db.ExecContext(ctx,\n" +
			"		`UPDATE resources SET data = ?, last_fencing_token = ? WHERE id = ? AND CAST(last_fencing_token AS TEXT) < CAST(? AS TEXT)`,\n" +
			"		data, int64(tok), id, int64(tok))\n" +
			"	if err != nil {\n" +
			"		return err\n" +
			"	}\n" + staleUnlessChanged),
		Caught: "Tokens compared as text",
	},
	{
		Name: "the last token kept in the Exercise value, checked before the UPDATE",
		Edits: append(update(`	s.mu.Lock()
	defer s.mu.Unlock()
	if tok <= s.last[id] {
		return fmt.Errorf("%w: order %s has token %d", fencing.ErrStaleToken, id, s.last[id])
	}
	if _, err := s.db.ExecContext(ctx,
		`+"`UPDATE resources SET data = ?, last_fencing_token = ? WHERE id = ?`"+`,
		data, int64(tok), id); err != nil {
		return err
	}
	s.last[id] = tok
	return nil`),
			labs.Replace("type Exercise struct{ *table }", `type Exercise struct {
	*table
	mu   sync.Mutex // protects last
	last map[string]fencing.Token
}`),
			labs.Replace("return &Exercise{t}, nil", "return &Exercise{table: t, last: map[string]fencing.Token{}}, nil"),
			labs.Replace("\t\"fmt\"\n", "\t\"fmt\"\n\t\"sync\"\n")),
		Caught: "the last token must live in the storage, not in the Go value",
	},
}

func init() { wrongFixes = append(wrongFixes, contractWrongFixes...) }
