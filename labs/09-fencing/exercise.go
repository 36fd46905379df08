package lab09

import (
	"context"

	"github.com/locklab/locklab/fencing"
)

// Exercise is the order table as the order service writes it: each write
// carries the fencing token of the lock its worker holds, and the row keeps
// the token with the data. Run `make exercise LAB=09`: it fails until a
// write whose token is older than one the row has already accepted changes
// nothing and returns an error wrapping fencing.ErrStaleToken.
type Exercise struct{ *table }

// OpenExercise opens the order table in the SQLite file at path, creating
// both if missing. Close it when done.
func OpenExercise(ctx context.Context, path string) (*Exercise, error) {
	t, err := openTable(ctx, path)
	if err != nil {
		return nil, err
	}
	return &Exercise{t}, nil
}

// Write sets the data of order id, written under the lock whose fencing
// token is tok, and records tok as the row's last token.
func (s *Exercise) Write(ctx context.Context, id, data string, tok fencing.Token) error {
	if err := s.ensureRow(ctx, id, tok); err != nil {
		return err
	}
	// Your code here (Lab 09): a worker whose lease ran out while it was
	// frozen still has its old token. If the row has already accepted a
	// newer one, change nothing and return an error wrapping
	// fencing.ErrStaleToken.
	_, err := s.db.ExecContext(ctx,
		`UPDATE resources SET data = ?, last_fencing_token = ? WHERE id = ?`,
		data, int64(tok), id)
	return err
}
