package labs

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// The contract of a store that takes fencing tokens (lab 09's exercise),
// said once: it needs no Redis, only the store.

// FencedStore is a store whose writes carry the fencing token of the lock
// their writer holds: Write sets row id's data unless the row has accepted
// a newer token (or this one), and Read returns the row's data.
type FencedStore interface {
	Write(ctx context.Context, id, data string, tok uint64) error
	Read(ctx context.Context, id string) (string, error)
}

// StoreContract describes a lab's store for its contract.
type StoreContract struct {
	// Open returns a new store value on the same storage, every call:
	// two workers, two processes. It is closed when the test ends.
	Open func(t testing.TB) FencedStore
	// Stale is the error a refused write wraps (fencing.ErrStaleToken).
	Stale error
}

// ExerciseStoreContract runs the store contract on the lab's exercise:
// built with -tags exercise, it demands that tokens are compared as
// numbers (the writes step over 9 to 10, 99 to 100 and 999 to 1000, where
// a comparison as text goes wrong), that a stale token or a repeated one
// is refused with an error wrapping Stale and changes nothing, and that
// what one store value accepted, another value on the same storage knows
// (the last token lives in the storage, not in the Go value). Without the
// tag it skips: the untouched exercise is the lesson's to catch, and
// [FixedStoreContract] proves the contract passable.
func ExerciseStoreContract(t *testing.T, title string, c StoreContract) {
	t.Helper()
	if !exerciseMode {
		t.Skipf("the contract of a store runs on your exercise with -tags exercise (make exercise LAB=%s)", labNumber())
	}
	checkStoreContract(t, title+" contract", "exercise", c)
}

// FixedStoreContract runs the store contract on a lab's reference store.
func FixedStoreContract(t *testing.T, title string, c StoreContract) {
	t.Helper()
	checkStoreContract(t, title+" contract", "fixed", c)
}

func checkStoreContract(t *testing.T, title, label string, c StoreContract) {
	t.Helper()
	start := time.Now()
	ctx := t.Context()
	stores := []FencedStore{c.Open(t), c.Open(t)}
	names := []string{"store 1", "store 2"}
	const id = "1001"
	var failed []string
	fail := func(format string, args ...any) {
		failed = append(failed, fmt.Sprintf(format, args...))
	}
	last, data := uint64(0), ""
	mine := []uint64{0, 0} // the last token each store value wrote
	// Each step is a write through one of the two store values.
	steps := []struct {
		by   int
		tok  uint64
		want bool // accepted
	}{
		{0, 8, true}, {0, 7, false}, {1, 9, true}, {1, 10, true}, {0, 9, false}, {0, 10, false},
		{1, 99, true}, {1, 100, true}, {0, 99, false}, {0, 100, false},
		{1, 999, true}, {1, 1000, true}, {0, 999, false}, {0, 1001, true},
	}
	for _, st := range steps {
		s, name := stores[st.by], names[st.by]
		d := fmt.Sprintf("written with token %d", st.tok)
		err := s.Write(ctx, id, d, st.tok)
		switch {
		case st.want && err != nil && fmt.Sprint(st.tok) < fmt.Sprint(last):
			fail("%s refused a write with token %d after token %d was accepted (%v): %d is newer. Tokens compared as text put \"%d\" before \"%d\"; compare them as numbers", name, st.tok, last, err, st.tok, st.tok, last)
		case st.want && err != nil:
			fail("%s refused a write with token %d, newer than the row's %d: %v", name, st.tok, last, err)
		case !st.want && err == nil && st.tok == last:
			fail("%s accepted a second write with token %d, the row's own: each token writes a row once", name, st.tok)
		case !st.want && err == nil && st.tok > mine[st.by]:
			fail("%s accepted a write with token %d after %s had written %d: a stale write. %s itself had written only up to %d: the last token must live in the storage, not in the Go value (each worker has its own)", name, st.tok, names[1-st.by], last, name, mine[st.by])
		case !st.want && err == nil:
			fail("%s accepted a write with token %d after token %d: a stale write", name, st.tok, last)
		case !st.want && !errors.Is(err, c.Stale):
			fail("%s refused a write with token %d after token %d with %v: a refused write returns an error wrapping %v", name, st.tok, last, err, c.Stale)
		}
		if len(failed) > 0 {
			break
		}
		if st.want {
			last, data, mine[st.by] = st.tok, d, st.tok
		}
		got, err := stores[1-st.by].Read(ctx, id)
		if err != nil {
			fail("reading order %s: %v", id, err)
			break
		}
		if got != data {
			fail("after the write with token %d the row holds %q; want %q", st.tok, got, data)
			break
		}
	}
	stats := fmt.Sprintf("%4.1fs  %d writes", time.Since(start).Seconds(), len(steps))
	head := title + " " + label + ": "
	if len(failed) > 0 {
		fmt.Printf("%s1 violation ... FAIL  %s\n", head, stats)
		t.Fatalf("%s1 violation\n  tokens 8, 9, 10, 99, 100, 999, 1000, 1001 from two store values on one storage, stale ones tried between them\n  VIOLATION: %s", head, failed[0])
	}
	fmt.Printf("%sno violation ... ok  %s\n", head, stats)
}
