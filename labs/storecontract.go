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

// The contract of a writer (labs 13 and 14): an exercise that writes to a
// store as the holder of a lock, and must make the write conditional on
// still holding it, where the store can check it. Like the store's, it is
// said once, for any store: the lab supplies a way to take a hold and to
// end it as the lock's server would.

// A Hold is one worker's hold of a lab's lock, with the exercise's write
// bound to it. [WriterContract.Hold] makes one; the contract releases it.
type Hold interface {
	// Write runs the exercise's write of data as this hold.
	Write(ctx context.Context, data string) error
	// Read returns what the store holds now, as this hold's write would
	// put it (for a write in the lock's own transaction: as that
	// transaction sees it, while it lives).
	Read(ctx context.Context) (string, error)
	// Want returns what Read must return after this hold wrote data:
	// data itself, or data with the hold's token.
	Want(data string) string
	// Lose ends the hold as the lock's server would when the holder
	// pauses past its lease: the lease revoked, the session ended.
	Lose(ctx context.Context) error
	// Release gives the hold back (Unlock), and keeps what it wrote.
	Release(ctx context.Context) error
}

// WriterContract describes a lab's writer for its contract.
type WriterContract struct {
	// Store names the store in messages ("etcd", "the database").
	Store string
	// Hold takes a fresh hold for a new worker (each call a new one,
	// after the last was released or lost).
	Hold func(t testing.TB) Hold
	// Refused is the error a refused write must wrap, if the lab has one
	// (lab13.ErrRefused); nil: any error.
	Refused error
	// Name is the exercise's function, in messages ("WriteOrder").
	Name string
}

// ExerciseWriterContract runs the writer contract on the lab's exercise:
// built with -tags exercise, it demands that a write while holding lands,
// with the data and token it is given; that a write after the hold was
// lost and the next holder wrote returns an error (wrapping Refused) and
// changes nothing, however the worker's own process sees its lock; that a write whose context has
// ended returns an error and changes nothing; and that what a hold wrote
// stays once the hold is released and its lease is gone. Without the tag
// it skips, as [ExerciseStoreContract] does.
func ExerciseWriterContract(t *testing.T, title string, c WriterContract) {
	t.Helper()
	if !exerciseMode {
		t.Skipf("the contract of a writer runs on your exercise with -tags exercise (make exercise LAB=%s)", labNumber())
	}
	checkWriterContract(t, title+" contract", "exercise", c)
}

// FixedWriterContract runs the writer contract on a lab's reference
// writer: proof that it can be passed.
func FixedWriterContract(t *testing.T, title string, c WriterContract) {
	t.Helper()
	checkWriterContract(t, title+" contract", "fixed", c)
}

// checkWriterContract runs the contract's steps, each on a fresh hold,
// and stops at the first broken promise.
func checkWriterContract(t *testing.T, title, label string, c WriterContract) {
	t.Helper()
	start := time.Now()
	ctx := t.Context()
	name, store := c.Name, c.Store
	var failed string
	fail := func(format string, args ...any) {
		if failed == "" {
			failed = fmt.Sprintf(format, args...)
		}
	}
	must := func(what string, err error) bool {
		if err != nil {
			fail("%s: %v", what, err)
			return false
		}
		return true
	}
	read := func(h Hold) (string, bool) {
		got, err := h.Read(ctx)
		return got, must("reading the store", err)
	}
	// lands checks a write the store must take.
	lands := func(h Hold, data, why string) bool {
		err := h.Write(ctx, data)
		if err != nil {
			fail("%s refused a write while its worker held the lock (%s): %v", name, why, err)
			return false
		}
		got, ok := read(h)
		if !ok {
			return false
		}
		if want := h.Want(data); got != want {
			fail("%s returned nil for %q, but %s holds %q, not %q: only the worker said the write succeeded, or it wrote something else than it was given (%s)", name, data, store, got, want, why)
			return false
		}
		return true
	}
	// refused checks a write the store must not take: an error, and
	// nothing changed.
	refused := func(h Hold, wctx context.Context, data, why, cause string) bool {
		before, ok := read(h)
		if !ok {
			return false
		}
		err := h.Write(wctx, data)
		after, ok := read(h)
		if !ok {
			return false
		}
		switch {
		case after != before && after == h.Want(data):
			fail("%s wrote %q %s: %s", name, data, why, cause)
		case after != before:
			fail("%s changed %s from %q to %q %s: %s", name, store, before, after, why, cause)
		case err == nil:
			fail("%s returned nil %s, and %s did not take the write: a write that did not happen must return an error", name, why, store)
		case c.Refused != nil && wctx.Err() == nil && !errors.Is(err, c.Refused):
			fail("%s refused the write %s with %v: a refused write returns an error wrapping %v", name, why, err, c.Refused)
		}
		return failed == ""
	}
	steps := 0
	func() {
		// 1: a holder's writes land, each with what it was given.
		h := c.Hold(t)
		defer func() { _ = h.Release(ctx) }()
		steps++
		if !lands(h, "packed", "the first write of a hold") || !lands(h, "shipped", "a second write, other data") {
			return
		}
		// 2: a write after the hold is lost, and the next holder has
		// written, is refused by the store.
		steps++
		if !must("ending the hold", h.Lose(ctx)) {
			return
		}
		next := c.Hold(t)
		steps++
		if !lands(next, "newer", "the next holder's, after the first hold was lost") || !must("releasing the next hold", next.Release(ctx)) {
			return
		}
		refused(h, ctx, "late", "after its lock was lost (its lease or session ended, as for a worker paused past it) and the next holder wrote",
			"the lock's server had ended the hold, and the store took the write anyway, over the next holder's. The lease or token must be checked by the store, in the write itself, not by the worker before it")
	}()
	if failed == "" {
		// 3: a write whose context has ended is not made.
		func() {
			h := c.Hold(t)
			defer func() { _ = h.Release(ctx) }()
			steps++
			done, cancel := context.WithCancel(ctx)
			cancel()
			refused(h, done, "cancelled", "with its context cancelled", "the write must use the ctx it is given, and return its error")
		}()
	}
	if failed == "" {
		// 4: what a hold wrote stays when the hold ends.
		func() {
			h := c.Hold(t)
			steps++
			if !lands(h, "kept", "before its release") {
				_ = h.Release(ctx)
				return
			}
			want := h.Want("kept") // as the hold wrote it, while it holds
			if !must("releasing the hold", h.Release(ctx)) || !must("ending the released hold's lease", h.Lose(ctx)) {
				return
			}
			if got, ok := read(h); ok && got != want {
				fail("%s holds %q once the hold that wrote %q was released and its lease ended: a write must outlive the lock (not be tied to the lock's lease, nor rolled back with it)", store, got, "kept")
			}
		}()
	}
	stats := fmt.Sprintf("%4.1fs  %d holds", time.Since(start).Seconds(), steps)
	head := title + " " + label + ": "
	if failed != "" {
		fmt.Printf("%s1 violation ... FAIL  %s\n", head, stats)
		t.Fatalf("%s1 violation\n  writes while holding, after the hold was lost, with a cancelled context, and after the release\n  VIOLATION: %s", head, failed)
	}
	fmt.Printf("%sno violation ... ok  %s\n", head, stats)
}
