package lab14_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/locklab/locklab/internal/rig"
	"github.com/locklab/locklab/internal/sysclient"
	"github.com/locklab/locklab/labs"
	lab14 "github.com/locklab/locklab/labs/14-database"
	"github.com/locklab/locklab/pglock"
)

// Part 1's race, explored: A locks order 1001's row, ships the order and
// unlocks; the server may end A's lock session at any moment while it is
// in its transaction (an event: a pause past idle_in_transaction_session_
// timeout, the session terminated at once, its transaction rolled back and
// the row released); B, once A's session is gone or A is done, locks,
// ships and unlocks, in one turn (where B stops changes nothing A can
// see). A parks at the lock's hook points (acquired, before-release) and
// right before each statement that writes leaves it
// (lab14.HookBeforeWrite). Whatever the order, no write may land after a
// write with a newer token: a write that goes out after A's session ended
// must not commit.
//
// The exploration's PostgreSQL lives as long as the test, not a schedule:
// it is started with the test's t (quiet, for an exercise, so that a
// failing run leaves the server's log out, as Scene.ServerT does).
func rowRace(t *testing.T, quiet bool) labs.Race {
	t.Helper()
	var st testing.TB = t
	if quiet {
		st = labs.QuietT(t)
	}
	var (
		once sync.Once
		p    *rig.Postgres
		pool *pgxpool.Pool
	)
	start := func(s *labs.Scene) {
		once.Do(func() {
			p = rig.StartPostgres(st)
			var err error
			if pool, err = sysclient.Postgres(context.Background(), p.DSN(p.Addr()), 4); err != nil {
				t.Fatalf("postgres pool: %v", err)
			}
			t.Cleanup(pool.Close)
			if err := lab14.Setup(context.Background(), pool); err != nil {
				t.Fatalf("orders table: %v", err)
			}
		})
		// Each schedule starts from order 1001 paid, and counts its
		// tokens from a hold taken before it.
		_, err := pool.Exec(s.Ctx, `UPDATE orders SET status = 'paid', token = 0 WHERE id = $1`, order)
		s.Must(err)
		first := pglock.NewRow(pool, "lab14:base")
		s.Must(first.Lock(s.Ctx))
		s.Params[baseParam] = strconv.FormatUint(first.Fence(), 10)
		s.Must(first.Unlock(s.Ctx))
		s.Params[appParam] = p.DSN(p.Addr())
		// A worker stuck on its own row lock (a write through the pool
		// as well) is let go once the server ends its session.
		s.Params[lockParam] = p.DSN(p.Addr()) + "&idle_in_transaction_session_timeout=" + ms(idleInTx)
		s.Store = "PostgreSQL"
	}
	return labs.Race{
		Points: []string{pglock.HookAcquired, pglock.HookBeforeRelease, lab14.HookBeforeWrite},
		Ops:    []string{"lock", "unlock", ship},
		Actors: func(s *labs.Scene, impl *labs.Impl) []*labs.Actor {
			start(s)
			a := s.Client("A", impl, labs.Param(lockParam, s.Params[lockParam]+"&application_name="+raceLockApp))
			b := s.Client("B", impl)
			ended := false
			end := s.Event("expire", func() bool {
				return !ended && len(raceSessions(s, pool)) > 0 // A is in its lock transaction
			}, func() {
				pids := raceSessions(s, pool)
				for _, pid := range pids {
					_, err := pool.Exec(s.Ctx, `SELECT pg_terminate_backend($1)`, pid)
					s.Must(err)
				}
				ended = true
				for _, pid := range pids {
					waitSessionGone(s, pool, strconv.Itoa(pid), "the server ended A's lock session (A paused past idle_in_transaction_session_timeout): rolled back, the row released")
				}
			})
			aa := s.Actor(a, "lock", ship+" "+dataA, "unlock")
			ba := s.Actor(b, lockShipUnlock+" "+dataB).When(func() bool { return ended || aa.Ended() > 0 })
			return []*labs.Actor{aa, end, ba}
		},
	}
}

// raceLockApp names A's lock sessions in pg_stat_activity.
const raceLockApp = "lab14-race-A-lock"

// raceSessions returns the pids of A's lock sessions in a transaction.
func raceSessions(s *labs.Scene, pool *pgxpool.Pool) []int {
	s.T().Helper()
	rows, err := pool.Query(s.Ctx, `SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND xact_start IS NOT NULL ORDER BY pid`, raceLockApp)
	s.Must(err)
	defer rows.Close()
	var pids []int
	for rows.Next() {
		var pid int
		s.Must(rows.Scan(&pid))
		pids = append(pids, pid)
	}
	s.Must(rows.Err())
	return pids
}

// lockShipUnlock is B's part in the race: Lock, ship arg, Unlock, with no
// hook point armed. Its Lock waits at most 2s: a worker that keeps the row
// (a write that takes the lock again) keeps B out until A unlocks, which
// in the race is a later turn; B then gives up instead of waiting for it.
var lockShipUnlock = labs.RegisterLockedOp("lock-ship-unlock", labs.LockedOp{
	Op: ship, Wait: 2 * time.Second, Lock: "the row lock", Holder: "A's session still holds it?",
})

var rowExplored = labs.ExploreOpts{Exhaustive: true, Budget: 400}

func TestLab14_BrokenWriteOutsideTheLockExplored(t *testing.T) {
	t.Parallel()
	labs.ExploreBroken(t, titleRow, rowRace(t, false), rowViaPool, rowExplored)
}

func TestLab14_FixedWriteInTheLocksTransactionExplored(t *testing.T) {
	t.Parallel()
	labs.ExploreFixed(t, titleRow, rowRace(t, false), rowViaLock, rowExplored)
}

func TestLab14_ExerciseExplored(t *testing.T) {
	t.Parallel()
	labs.ExploreExercise(t, titleRow, rowRace(t, true), exercise, rowExplored)
}
