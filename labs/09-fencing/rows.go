package lab09

import (
	"context"
	"fmt"

	"github.com/locklab/locklab/fencing"
)

// Store is what a worker writes order rows to: package fencing's Store
// (it refuses stale tokens), [UncheckedStore] (it does not) or the
// learner's [Exercise]. Lab 13's ZooKeeper workers write through one too.
type Store interface {
	Write(ctx context.Context, id, data string, tok fencing.Token) error
	Read(ctx context.Context, id string) (data string, last fencing.Token, err error)
	Close() error
}

// ReadRow opens a store with open on the SQLite file at path, and returns
// order id's row as "<last token> <data>": what the labs' read-order
// operations answer. It closes the store before it returns.
func ReadRow(ctx context.Context, open func(ctx context.Context, path string) (Store, error), path, id string) (string, error) {
	st, err := open(ctx, path)
	if err != nil {
		return "", err
	}
	defer st.Close()
	data, last, err := st.Read(ctx, id)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d %s", last, data), nil
}
