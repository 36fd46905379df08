package fencing_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/locklab/locklab/fencing"
	"github.com/locklab/locklab/internal/proc"
)

// openStore opens a Store on a new file in the test's temp dir.
func openStore(t *testing.T) *fencing.Store {
	t.Helper()
	s, err := fencing.OpenStore(t.Context(), filepath.Join(t.TempDir(), "store.db"))
	if err != nil {
		t.Fatalf("OpenStore: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// checkRow fails the test unless resource id holds data with token last.
func checkRow(t *testing.T, s *fencing.Store, id, data string, last fencing.Token) {
	t.Helper()
	gotData, gotLast, err := s.Read(context.Background(), id)
	if err != nil || gotData != data || gotLast != last {
		t.Errorf("Read(%q) = %q, %d, %v; want %q, %d, nil", id, gotData, gotLast, err, data, last)
	}
}

func TestStoreRejectsStaleWrites(t *testing.T) {
	ctx := t.Context()
	s := openStore(t)
	checkRow(t, s, "order-1", "", 0) // never written

	if err := s.Write(ctx, "order-1", "v5", 5); err != nil {
		t.Fatalf("first Write with token 5 = %v; want nil", err)
	}
	for _, tok := range []fencing.Token{3, 5} {
		err := s.Write(ctx, "order-1", fmt.Sprint("v", tok), tok)
		if !errors.Is(err, fencing.ErrStaleToken) {
			t.Errorf("Write with token %d after 5 = %v; want ErrStaleToken", tok, err)
		} else if msg := err.Error(); !strings.Contains(msg, `"order-1"`) || !strings.Contains(msg, fmt.Sprint("token ", tok)) ||
			!strings.Contains(msg, "seen token 5") {
			t.Errorf("stale write error %q; want it to name the id, token %d and the newest token 5", msg, tok)
		}
		checkRow(t, s, "order-1", "v5", 5)
	}
	if err := s.Write(ctx, "order-1", "v6", 6); err != nil {
		t.Errorf("Write with token 6 = %v; want nil", err)
	}
	checkRow(t, s, "order-1", "v6", 6)
	checkRow(t, s, "order-2", "", 0) // rows are independent
	if err := s.Write(ctx, "order-2", "first", 1); err != nil {
		t.Errorf("first Write of another row with token 1 = %v; want nil", err)
	}
}

// TestStoreConcurrentWriters starts one writer per token 1..64, in a random
// order, all at once. Whatever the interleaving, the row must end with the
// highest token's data, and every refused write must be refused as stale.
func TestStoreConcurrentWriters(t *testing.T) {
	const writers = 64
	s := openStore(t)
	tokens := rand.Perm(writers)
	var (
		mu       sync.Mutex // protects accepted
		accepted []fencing.Token
	)
	start := make(chan struct{})
	var g errgroup.Group
	for _, n := range tokens {
		tok := fencing.Token(n + 1)
		g.Go(func() error {
			<-start
			err := s.Write(context.Background(), "row", fmt.Sprint("data ", tok), tok)
			switch {
			case err == nil:
				mu.Lock()
				accepted = append(accepted, tok)
				mu.Unlock()
			case !errors.Is(err, fencing.ErrStaleToken):
				return err
			}
			return nil
		})
	}
	close(start)
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	checkRow(t, s, "row", fmt.Sprint("data ", writers), writers)
	t.Logf("%d of %d writes accepted", len(accepted), writers)
}

func TestStoreTwoInstancesOneFile(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "shared.db")
	var stores [2]*fencing.Store
	for i := range stores {
		s, err := fencing.OpenStore(ctx, path)
		if err != nil {
			t.Fatalf("OpenStore #%d: %v", i+1, err)
		}
		defer s.Close()
		stores[i] = s
	}
	a, b := stores[0], stores[1]
	if err := a.Write(ctx, "row", "a10", 10); err != nil {
		t.Fatalf("A.Write(10) = %v", err)
	}
	if err := b.Write(ctx, "row", "b9", 9); !errors.Is(err, fencing.ErrStaleToken) {
		t.Errorf("B.Write(9) after A wrote 10 = %v; want ErrStaleToken", err)
	}
	if err := b.Write(ctx, "row", "b11", 11); err != nil {
		t.Errorf("B.Write(11) = %v; want nil", err)
	}
	if err := a.Write(ctx, "row", "a10 again", 10); !errors.Is(err, fencing.ErrStaleToken) {
		t.Errorf("A.Write(10) after B wrote 11 = %v; want ErrStaleToken", err)
	}
	checkRow(t, a, "row", "b11", 11)
	checkRow(t, b, "row", "b11", 11)
}

// TestStoreAcrossProcesses runs this test binary again as a child process
// using the same database file as the test, and both play crossProcess:
// alternating writes that each process must see, then both writing the same
// tokens at once. No write may fail other than as stale (no "database is
// locked"), and no token may be accepted in both processes.
func TestStoreAcrossProcesses(t *testing.T) {
	t.Parallel() // mostly waiting for the child to start
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "shared.db")
	s, err := fencing.OpenStore(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childStoreEnv+"="+path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.Start(cmd); err != nil {
		t.Fatal(err)
	}
	out := bufio.NewScanner(pipe)
	if !out.Scan() || out.Text() != "ready" { // the child has opened the store
		_ = cmd.Wait()
		t.Fatalf("child did not start: %q; stderr:\n%s", out.Text(), stderr.String())
	}
	mine, parentErr := crossProcess(ctx, s, "parent")
	byChild := map[fencing.Token]bool{}
	for out.Scan() {
		var tok fencing.Token
		if _, err := fmt.Sscanf(out.Text(), "ok %d", &tok); err != nil {
			t.Errorf("child printed %q", out.Text())
		}
		byChild[tok] = true
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v; stderr:\n%s", err, stderr.String())
	}
	if parentErr != nil {
		t.Fatal(parentErr)
	}
	for _, tok := range mine {
		if byChild[tok] {
			t.Errorf("token %d accepted in both processes", tok)
		}
	}
	t.Logf("race phase: parent wrote %d tokens, child %d, of %d", len(mine), len(byChild), raceLast-raceFirst+1)
	_, last, err := s.Read(ctx, "shared")
	if err != nil || last != raceLast {
		t.Errorf("Read(shared) token = %d, %v; want %d", last, err, raceLast)
	}
}

func TestStoreBadInput(t *testing.T) {
	ctx := t.Context()
	s := openStore(t)
	var nilStore *fencing.Store
	tests := []struct {
		name string
		err  error
	}{
		{"nil store Write", nilStore.Write(ctx, "id", "d", 1)},
		{"nil store Read", func() error { _, _, err := nilStore.Read(ctx, "id"); return err }()},
		{"nil store Close", nilStore.Close()},
		{"zero Store Write", (&fencing.Store{}).Write(ctx, "id", "d", 1)},
		{"empty id Write", s.Write(ctx, "", "d", 1)},
		{"empty id Read", func() error { _, _, err := s.Read(ctx, ""); return err }()},
		{"token 0", s.Write(ctx, "id", "d", 0)},
		{"token above int64", s.Write(ctx, "id", "d", math.MaxInt64+1)},
		{"empty path", func() error { _, err := fencing.OpenStore(ctx, ""); return err }()},
		{"path with ?", func() error { _, err := fencing.OpenStore(ctx, "a?b"); return err }()},
		{"nil db", func() error { _, err := fencing.NewStore(ctx, nil); return err }()},
	}
	for _, tt := range tests {
		if !errors.Is(tt.err, fencing.ErrInvalid) {
			t.Errorf("%s: %v; want ErrInvalid", tt.name, tt.err)
		}
	}
	checkRow(t, s, "id", "", 0)
	if err := s.Write(ctx, "id", "max", math.MaxInt64); err != nil {
		t.Errorf("Write with token 2^63-1 = %v; want nil", err)
	}
	checkRow(t, s, "id", "max", math.MaxInt64)
}

func TestStoreClosed(t *testing.T) {
	s, err := fencing.OpenStore(t.Context(), filepath.Join(t.TempDir(), "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(t.Context(), "id", "d", 1); err == nil {
		t.Error("Write after Close = nil; want an error")
	}
}

func TestStoreInMemory(t *testing.T) {
	s, err := fencing.OpenStore(t.Context(), ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Write(t.Context(), "id", "d", 2); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(t.Context(), "id", "d", 1); !errors.Is(err, fencing.ErrStaleToken) {
		t.Errorf("Write(1) after 2 = %v; want ErrStaleToken", err)
	}
	checkRow(t, s, "id", "d", 2)
}

func TestNewStoreSharesCallersDB(t *testing.T) {
	ctx := t.Context()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "own.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, err := fencing.NewStore(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, "id", "d", 1); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.PingContext(ctx); err != nil {
		t.Errorf("db after Store.Close: %v; want it still open (the caller owns it)", err)
	}
}
