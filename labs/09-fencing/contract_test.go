package lab09_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/locklab/locklab/fencing"
	"github.com/locklab/locklab/labs"
	lab09 "github.com/locklab/locklab/labs/09-fencing"
)

// The contract of a store that takes fencing tokens, besides the lesson:
// tokens compared as numbers across digit boundaries (9 to 10, 99 to 100),
// stale and repeated tokens refused with fencing.ErrStaleToken, the last
// token kept in the file, not in the Go value.

// fencedRows adapts a lab09.Store to labs.FencedStore.
type fencedRows struct{ lab09.Store }

func (r fencedRows) Write(ctx context.Context, id, data string, tok uint64) error {
	return r.Store.Write(ctx, id, data, fencing.Token(tok))
}

func (r fencedRows) Read(ctx context.Context, id string) (string, error) {
	data, _, err := r.Store.Read(ctx, id)
	return data, err
}

// storeContract opens two store values on one SQLite file with open.
func storeContract(open opener) labs.StoreContract {
	var path string
	return labs.StoreContract{
		Stale: fencing.ErrStaleToken,
		Open: func(t testing.TB) labs.FencedStore {
			if path == "" {
				path = filepath.Join(t.TempDir(), "orders.db")
			}
			st, err := open(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			return fencedRows{st}
		},
	}
}

func TestLab09_ExerciseContract(t *testing.T) {
	labs.ExerciseStoreContract(t, "Lab 09 (fencing, the store)", storeContract(openWith(lab09.OpenExercise)))
}

func TestLab09_FixedContract(t *testing.T) {
	labs.FixedStoreContract(t, "Lab 09 (fencing, the store)", storeContract(openWith(fencing.OpenStore)))
}
