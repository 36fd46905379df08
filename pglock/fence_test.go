package pglock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/locklab/locklab/internal/leakcheck"
	"github.com/locklab/locklab/internal/rig"
	"github.com/locklab/locklab/pglock"
)

// TestFenceGrowsInHoldOrder: under contention, each holder's token is
// larger than the token of the holder before it. The row lock's token was
// its transaction id, assigned before the wait: 65-107 of 600 contended
// holds got a smaller token than the holder before them (issue 34).
func TestFenceGrowsInHoldOrder(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.Name, func(t *testing.T) {
			leakcheck.Guard(t)
			ctx := context.Background()
			key := lockKey(t)
			p := pool(t)
			const workers, holds = 6, 50
			var (
				mu         sync.Mutex // guards last, backwards, example
				last       uint64
				backwards  int
				example    string
				g          errgroup.Group
				firstError error
			)
			for w := range workers {
				m := lock(k, p, key)
				g.Go(func() error {
					for h := range holds {
						if err := m.Lock(ctx); err != nil {
							return fmt.Errorf("worker %d, hold %d: Lock: %w", w, h, err)
						}
						f := m.Fence()
						mu.Lock()
						if f <= last {
							backwards++
							if example == "" {
								example = fmt.Sprintf("token %d after %d", f, last)
							}
						}
						last = f
						mu.Unlock()
						if err := m.Unlock(ctx); err != nil {
							return fmt.Errorf("worker %d, hold %d: Unlock: %w", w, h, err)
						}
					}
					return nil
				})
			}
			firstError = g.Wait()
			if firstError != nil {
				t.Fatal(firstError)
			}
			if backwards > 0 {
				t.Errorf("%d of %d holds got a token not larger than the previous holder's (first: %s); want none", backwards, workers*holds, example)
			}
		})
	}
}

// TestFenceAfterCrash: the server is SIGKILLed while a holds the lock, and
// restarted (crash recovery). The next holder's token must be larger than
// a's: the row lock's transaction id was handed out again after each of 3
// crashes (issue 34).
func TestFenceAfterCrash(t *testing.T) {
	t.Parallel()
	srv := rig.StartPostgres(t)
	for _, k := range kinds {
		t.Run(k.Name, func(t *testing.T) {
			ctx := context.Background()
			key := lockKey(t)
			for crash := range 3 {
				a, b := lock(k, pool(t, srv.DSN(srv.Addr())), key), lock(k, pool(t, srv.DSN(srv.Addr())), key)
				if err := a.Lock(ctx); err != nil {
					t.Fatal(err)
				}
				before := a.Fence()
				if err := srv.Kill(); err != nil {
					t.Fatal(err)
				}
				if err := srv.Restart(ctx); err != nil {
					t.Fatal(err)
				}
				if err := a.Unlock(ctx); err == nil {
					t.Errorf("crash %d: a.Unlock after the server crashed = nil; want an error", crash)
				}
				if err := b.Lock(ctx); err != nil {
					t.Fatal(err)
				}
				if after := b.Fence(); after <= before {
					t.Errorf("crash %d: the next holder's token after a crash = %d; want more than %d, the token of the holder when it crashed", crash, after, before)
				}
				if err := b.Unlock(ctx); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestConcurrentMethods: the methods are safe for concurrent use. PID or a
// second Unlock beside an Unlock panicked: a nil pooled connection, or
// pgconn's "slow write timer already active" (issue 34). Two Unlocks of
// one hold: exactly one nil, the other ErrNotHeld.
func TestConcurrentMethods(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.Name, func(t *testing.T) {
			leakcheck.Guard(t)
			ctx := context.Background()
			m := lock(k, pool(t), lockKey(t))
			pid := func() uint32 {
				switch l := m.(type) {
				case *pglock.Mutex:
					return l.PID()
				case *pglock.RowMutex:
					_ = l.Tx()
					return l.PID()
				}
				return 0
			}
			for round := range 30 {
				if err := m.Lock(ctx); err != nil {
					t.Fatal(err)
				}
				var wg sync.WaitGroup
				errs := make([]error, 2)
				start := make(chan struct{})
				for i := range errs {
					wg.Go(func() {
						<-start
						errs[i] = m.Unlock(ctx)
					})
				}
				for range 2 {
					wg.Go(func() {
						<-start
						for range 50 {
							_ = pid()
							_ = m.Fence()
						}
					})
				}
				close(start)
				wg.Wait()
				nils, notHeld := 0, 0
				for _, err := range errs {
					switch {
					case err == nil:
						nils++
					case errors.Is(err, pglock.ErrNotHeld):
						notHeld++
					}
				}
				if nils != 1 || notHeld != 1 {
					t.Fatalf("round %d: two Unlocks at once = %v; want one nil and one ErrNotHeld", round, errs)
				}
			}
			getsTheLock(t, ctx, lock(k, pool(t), m.(interface{ Key() string }).Key()))
		})
	}
}

// TestSessionEndedWhileHolding: an administrator ends the holder's session
// (pg_terminate_backend on the PID the lock reports), directly and behind
// PgBouncer in transaction pooling. The lock is free for the next client
// at once; the holder learns it at its next statement: a RowMutex's Tx
// fails (its work is rolled back), and Unlock returns ErrNotHeld. pglock
// has no Done to tell the holder sooner.
func TestSessionEndedWhileHolding(t *testing.T) {
	b := rig.StartPgBouncer(t, server, rig.PoolTransaction)
	for _, via := range []struct{ name, dsn string }{{"direct", dsn}, {"pgbouncer-transaction", b.DSN()}} {
		for _, k := range kinds {
			t.Run(via.name+"/"+k.Name, func(t *testing.T) {
				leakcheck.Guard(t)
				ctx := context.Background()
				key := lockKey(t)
				a := lock(k, defaultPool(t, via.dsn), key)
				if err := a.Lock(ctx); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = a.Unlock(context.Background()) }) // before the pool closes, if the test fails
				pid := a.(interface{ PID() uint32 }).PID()
				var ended bool
				if err := pool(t).QueryRow(ctx, `SELECT pg_terminate_backend($1)`, int64(pid)).Scan(&ended); err != nil || !ended {
					t.Fatalf("pg_terminate_backend(%d) = %v, %v; want true (PID() names the holder's server process)", pid, ended, err)
				}
				getsTheLock(t, ctx, lock(k, pool(t), key))
				if r, ok := a.(*pglock.RowMutex); ok {
					if _, err := r.Tx().Exec(ctx, "SELECT 1"); err == nil {
						t.Error("a statement in the ended session's Tx = nil; want an error")
					}
				}
				if err := a.Unlock(ctx); !errors.Is(err, pglock.ErrNotHeld) {
					t.Errorf("a.Unlock after its session was ended = %v; want ErrNotHeld", err)
				}
			})
		}
	}
}
