package lab14_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/locklab/locklab/correct"
	"github.com/locklab/locklab/internal/history"
	"github.com/locklab/locklab/internal/rig"
	"github.com/locklab/locklab/internal/sysclient"
	"github.com/locklab/locklab/labs"
	lab14 "github.com/locklab/locklab/labs/14-database"
	"github.com/locklab/locklab/pglock"
)

func TestMain(m *testing.M) { labs.Main(m) }

const (
	titleRow       = "Lab 14 (row lock, paused holder)"
	titleAdvisory  = "Lab 14 (advisory lock, partitioned holder)"
	titleBackstop  = "Lab 14 (behind a Redis lock that failed)"
	order          = "1001"
	dataA          = "packed by A"
	dataB          = "shipped by B"
	refundA        = "refunded by A"
	refundB        = "refunded by B"
	idleInTx       = 3 * time.Second        // idle_in_transaction_session_timeout of the lock sessions, part 1
	idleSession    = time.Second            // idle_session_timeout of A's lock session, part 2
	holdWait       = 500 * time.Millisecond // how long B waits while A holds the lock, before the server steps in
	partitionWait  = 2 * time.Second        // how long B waits for a lock kept by a cut-off session
	appParam       = "app"                  // the application pool's DSN
	lockParam      = "lock"                 // the lock pool's DSN
	baseParam      = "base"                 // the token of a hold taken before the scene
	refundsPlain   = "refunds_plain"        // part 3's refunds, with no constraint
	refundsOnce    = "refunds"              // part 3's refunds, one per order (pglock.Once)
	versionedTable = "orders_v"             // part 3's orders, with a version column (pglock.Versioned)
)

// ms spells d as PostgreSQL settings take it: whole milliseconds.
func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// pools returns the client's pools: the application's and the lock's,
// closed when the client stops.
func pools(e *labs.Env) (app, lock *pgxpool.Pool, err error) {
	ctx := context.Background()
	if app, err = sysclient.Postgres(ctx, e.Param(appParam, ""), 4); err != nil {
		return nil, nil, err
	}
	e.Defer(app.Close)
	if lock, err = sysclient.Postgres(ctx, e.Param(lockParam, e.Param(appParam, "")), 4); err != nil {
		return nil, nil, err
	}
	e.Defer(lock.Close)
	return app, lock, nil
}

// rowWorker holds order 1001's row lock and ships the order with ship.
type rowWorker struct {
	*pglock.RowMutex
	app  *pgxpool.Pool
	base uint64 // the token of a hold taken before the scene
	ship func(ctx context.Context, lock, app lab14.Orders, status string, token uint64) error
}

// Fence is the lock's token, counted from the token of a hold taken
// before the scene: the same in every run, whatever the server's crash
// epoch (pglock's tokens carry it in their high bits).
func (w *rowWorker) Fence() uint64 {
	if f := w.RowMutex.Fence(); f > w.base {
		return f - w.base
	}
	return 0
}

// viaPool is the order service's first write: through its pool, outside
// the lock's transaction.
func viaPool(ctx context.Context, _, app lab14.Orders, status string, token uint64) error {
	return app.Write(ctx, order, status, token)
}

// viaLock writes in the lock's transaction: it commits with the release,
// or not at all.
func viaLock(ctx context.Context, lock, _ lab14.Orders, status string, token uint64) error {
	return lock.Write(ctx, order, status, token)
}

func newRowWorker(ship func(context.Context, lab14.Orders, lab14.Orders, string, uint64) error) func(e *labs.Env) labs.Locker {
	return func(e *labs.Env) labs.Locker {
		app, lock, err := pools(e)
		if err != nil {
			return labs.Failing(err)
		}
		base, _ := strconv.ParseUint(e.Param(baseParam, "0"), 10, 64)
		return &rowWorker{RowMutex: pglock.NewRow(lock, "order:"+order, pglock.WithHook(e.Hook)), app: app, base: base, ship: ship}
	}
}

// advisoryWorker holds an advisory lock on order 1001 and writes through
// the application's pool, checked against its token or not.
type advisoryWorker struct {
	*pglock.Mutex
	app    *pgxpool.Pool
	fenced bool
}

func newAdvisoryWorker(fenced bool) func(e *labs.Env) labs.Locker {
	return func(e *labs.Env) labs.Locker {
		app, lock, err := pools(e)
		if err != nil {
			return labs.Failing(err)
		}
		return &advisoryWorker{Mutex: pglock.New(lock, "order:"+order, pglock.WithHook(e.Hook)), app: app, fenced: fenced}
	}
}

// refundWorker holds lab 07's Redis lock and refunds order 1001 in the
// database, with the chapter's double guarantee (a version column and a
// unique constraint) or without.
type refundWorker struct {
	*correct.Mutex
	app      *pgxpool.Pool
	backstop bool
	read     int64 // the order's version when this worker read it
}

func newRefundWorker(backstop bool) func(e *labs.Env) labs.Locker {
	return func(e *labs.Env) labs.Locker {
		app, _, err := pools(e)
		if err != nil {
			return labs.Failing(err)
		}
		return &refundWorker{Mutex: correct.New(e.Redis(0), e.Key, correct.WithTTL(e.TTL)), app: app, backstop: backstop}
	}
}

var (
	rowViaPool  = labs.Register("lab14-row-pool", newRowWorker(viaPool))
	rowViaLock  = labs.Register("lab14-row-tx", newRowWorker(viaLock))
	exercise    = labs.Register("lab14-exercise", newRowWorker(lab14.ShipOrder))
	advUnfenced = labs.Register("lab14-advisory-unfenced", newAdvisoryWorker(false))
	advFenced   = labs.Register("lab14-advisory-fenced", newAdvisoryWorker(true))
	refundPlain = labs.Register("lab14-refund-plain", newRefundWorker(false))
	refundGuard = labs.Register("lab14-refund-backstop", newRefundWorker(true))

	_ = labs.RegisterError(pglock.ErrNotHeld, "not held")
	_ = labs.RegisterError(syscall.ECONNREFUSED, "connection refused")
)

// holds reports whether order 1001's status is data, as the worker's lock
// transaction sees it (a write in it, not committed yet) or, when that
// transaction is gone, as the database has it.
func holds(ctx context.Context, w *rowWorker, tx pgx.Tx, data string) bool {
	if status, _, err := (lab14.Orders{DB: tx}).Read(ctx, order); err == nil && status == data {
		return true
	}
	status, _, err := lab14.Orders{DB: w.app}.Read(ctx, order)
	return err == nil && status == data
}

// watchOwnLock watches, while the worker ships, for a statement of its
// own blocked by its own lock session (pg_blocking_pids): a write through
// the pool that waits for a row the lock's transaction has locked, which
// waits until the server ends that session. It records that once, on the
// worker's lane, and stops when the returned func is called.
func watchOwnLock(ctx context.Context, l *labs.Local, w *rowWorker) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	lockPID := int(w.PID())
	go func() {
		defer close(done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			var blocked int
			err := w.app.QueryRow(ctx, `SELECT pid FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid)) LIMIT 1`, lockPID).Scan(&blocked)
			if err == nil {
				l.Record(history.Event{Kind: history.Violation, Text: fmt.Sprintf("%s's write through the pool (session %d) waits for the order's row, which %s's own lock transaction (session %d) has locked by writing it: it can go on only once the server ends %s's session and takes the lock away. Write in the lock's transaction only, not through the pool as well", l.Name, blocked, l.Name, lockPID, l.Name)})
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() { cancel(); <-done }
}

// Operations the clients run, in whichever process hosts them.
var (
	// ship writes arg as order 1001's status, the worker's way, and
	// records whether the database took it.
	ship = labs.RegisterOp("ship", func(ctx context.Context, l *labs.Local, data string) (string, error) {
		var err error
		switch w := l.Locker.(type) {
		case *rowWorker:
			tx := w.Tx()
			if tx == nil {
				return "", fmt.Errorf("lab14: %s ships without holding the lock", l.Name)
			}
			lock := lab14.Orders{DB: lab14.Hooked(tx, l.Env.Hook)}
			app := lab14.Orders{DB: lab14.Hooked(w.app, l.Env.Hook)}
			stop := watchOwnLock(ctx, l, w)
			err = w.ship(ctx, lock, app, data, w.Fence())
			stop()
			if err == nil && !holds(ctx, w, tx, data) {
				// The effect, not the worker's word: ShipOrder said the
				// status was written, and the order does not hold it.
				l.Write(data, false)
				l.Record(history.Event{Kind: history.Violation, Text: fmt.Sprintf("%s's ShipOrder returned nil, but order %s does not hold %q, in the lock's transaction or out of it: only the worker said the write succeeded. A write that did not happen must return an error", l.Name, order, data)})
				return "refused", nil
			}
		case *advisoryWorker:
			app := lab14.Orders{DB: lab14.Hooked(w.app, l.Env.Hook)}
			if w.fenced {
				err = app.WriteFenced(ctx, order, data, w.Fence())
			} else {
				err = app.Write(ctx, order, data, w.Fence())
			}
		default:
			return "", fmt.Errorf("lab14: client %s's lock is a %T", l.Name, l.Locker)
		}
		l.Write(data, err == nil)
		if err != nil {
			return "refused", nil
		}
		return "accepted", nil
	})
	// pid returns the server process id of the worker's lock session.
	pid = labs.RegisterOp("pid", func(_ context.Context, l *labs.Local, _ string) (string, error) {
		switch w := l.Locker.(type) {
		case *rowWorker:
			return strconv.Itoa(int(w.PID())), nil
		case *advisoryWorker:
			return strconv.Itoa(int(w.PID())), nil
		}
		return "", fmt.Errorf("lab14: client %s's lock is a %T", l.Name, l.Locker)
	})
	// readRefund reads order 1001 before refunding it: its version, for a
	// worker with the backstop.
	readRefund = labs.RegisterOp("read-order", func(ctx context.Context, l *labs.Local, _ string) (string, error) {
		w := l.Locker.(*refundWorker)
		if w.backstop {
			_, v, err := pglock.NewVersioned(w.app, versionedTable).Read(ctx, order)
			w.read = v
			l.Note("order %s read at version %d", order, v)
			return "", err
		}
		status, _, err := lab14.Orders{DB: w.app}.Read(ctx, order)
		l.Note("order %s read: %s", order, status)
		return "", err
	})
	// refund refunds order 1001: marks it refunded and records the refund,
	// in one transaction. With the backstop, the mark needs the version
	// read before, and the record is refused if one exists.
	refund = labs.RegisterOp("refund", func(ctx context.Context, l *labs.Local, data string) (string, error) {
		w := l.Locker.(*refundWorker)
		err := pgx.BeginFunc(ctx, w.app, func(tx pgx.Tx) error {
			if !w.backstop {
				if err := (lab14.Orders{DB: tx}).Write(ctx, order, data, 0); err != nil {
					return err
				}
				_, err := tx.Exec(ctx, `INSERT INTO `+refundsPlain+` (order_id, by) VALUES ($1, $2)`, order, l.Name)
				return err
			}
			if _, err := pglock.NewVersioned(tx, versionedTable).Write(ctx, order, data, w.read); err != nil {
				return err
			}
			return pglock.NewOnce(tx, refundsOnce).Do(ctx, "refund:"+order, l.Name)
		})
		switch {
		case err == nil:
			l.Write(data, true)
			return "accepted", nil
		case errors.Is(err, pglock.ErrConflict), errors.Is(err, pglock.ErrDuplicate):
			l.Write(data, false)
			l.Note("%v", errors.Unwrap(err))
			return "refused", nil
		}
		return "", err
	})
)

// database starts a PostgreSQL server for the scene, makes order 1001,
// and returns the server and the harness's own pool.
func database(s *labs.Scene) (*rig.Postgres, *pgxpool.Pool) {
	s.T().Helper()
	p := rig.StartPostgres(s.ServerT())
	s.Params[appParam] = p.DSN(p.Addr())
	pool, err := sysclient.Postgres(s.Ctx, p.DSN(p.Addr()), 4)
	s.Must(err)
	s.T().Cleanup(pool.Close)
	s.Must(lab14.Setup(s.Ctx, pool))
	// One hold before the scene, on a key of its own: it makes pglock's
	// table and sequence, and its token is the base the scene's tokens
	// are counted from.
	first := pglock.NewRow(pool, "lab14:base")
	s.Must(first.Lock(s.Ctx))
	s.Params[baseParam] = strconv.FormatUint(first.Fence(), 10)
	s.Must(first.Unlock(s.Ctx))
	return p, pool
}

// waitSessionGone waits until the server has ended the session of pid and
// records why.
func waitSessionGone(s *labs.Scene, pool *pgxpool.Pool, pid, why string) {
	s.T().Helper()
	s.WaitFor("session "+pid+" ends", func() (bool, error) {
		var n int
		err := pool.QueryRow(s.Ctx, `SELECT count(*) FROM pg_stat_activity WHERE pid = $1`, pid).Scan(&n)
		return n == 0, err
	}, "%s", why)
}

// showOrder notes order 1001's row.
func showOrder(s *labs.Scene, pool *pgxpool.Pool) {
	s.T().Helper()
	status, tok, err := lab14.Orders{DB: pool}.Read(s.Ctx, order)
	s.Must(err)
	s.Note("order %s = %q, token %d", order, status, tok)
}

// Part 1: the row lock and a paused holder.
//
// A locks order 1001's row (SELECT ... FOR UPDATE in a transaction) and
// is about to ship the order when its process freezes. There is no lease:
// B waits, and gets nothing. The server ends A's session once its
// transaction has sat idle for idle_in_transaction_session_timeout,
// rolling it back and releasing the row. B locks it and ships. A thaws,
// and its write goes out.
func rowPaused(s *labs.Scene, impl *labs.Impl) {
	p, pool := database(s)
	s.Store = "PostgreSQL"
	s.Params[lockParam] = p.DSN(p.Addr()) + "&idle_in_transaction_session_timeout=" + ms(idleInTx)
	s.Note("lock sessions: idle_in_transaction_session_timeout = %v", idleInTx)
	a := s.Process("A", impl)
	b := s.Client("B", impl)

	s.Must(a.Lock())
	apid := a.MustDo(pid, "")
	w, frozen := a.FreezeBefore(lab14.HookBeforeWrite, ship, dataA)
	if !frozen {
		// The write gave up before sending anything: nothing to freeze.
		s.NotFrozen(a, w, b, func() { s.HolderWrites(b, ship, dataB, "the database") })
		showOrder(s, pool)
		return
	}

	if err := b.LockWithin(holdWait); err == nil {
		s.Violation("B got the row lock while A's transaction held it")
		s.Must(b.Unlock())
	}
	waitSessionGone(s, pool, apid, "the server ended A's session (idle in its transaction): rolled back, the row released")
	s.Must(b.Lock())
	s.HolderWrites(b, ship, dataB, "the database")
	if err := b.Unlock(); err != nil {
		// The server ended B's session too (its lock transaction sat idle
		// while B waited on something else): say so, not the error chain.
		if !errors.Is(err, pglock.ErrNotHeld) {
			s.Must(err)
		}
		s.Violation("B's lock was taken away while B held it: the server ended B's session, idle in its transaction for %v while B's write waited", idleInTx)
	}

	s.Must(a.Unfreeze(w))
	a.ReleaseAfterFault()
	showOrder(s, pool)
}

func TestLab14_BrokenWriteOutsideTheLock(t *testing.T) {
	t.Parallel()
	labs.Broken(t, titleRow, rowPaused, rowViaPool)
}

func TestLab14_FixedWriteInTheLocksTransaction(t *testing.T) {
	t.Parallel()
	labs.Fixed(t, titleRow, rowPaused, rowViaLock)
}

func TestLab14_Exercise(t *testing.T) {
	t.Parallel()
	labs.Exercise(t, titleRow, rowPaused, exercise)
}

// Part 2: an advisory lock held by a session cut off from the server.
func advisoryPartition(timeout bool) labs.Scenario {
	return func(s *labs.Scene, impl *labs.Impl) {
		p, pool := database(s)
		link := s.Link(p.Addr())
		lockDSN := p.DSN(link.Addr())
		setting := "A's lock session: no idle timeout"
		if timeout {
			lockDSN += "&idle_session_timeout=" + ms(idleSession)
			setting = fmt.Sprintf("A's lock session: idle_session_timeout = %v", idleSession)
		}
		s.Note("%s", setting)
		a := s.Client("A", impl, labs.Param(appParam, p.DSN(link.Addr())), labs.Param(lockParam, lockDSN))
		b := s.Client("B", impl)

		s.Must(a.Lock())
		apid := a.MustDo(pid, "")
		link.Cut("A cut off from PostgreSQL")

		if !timeout {
			if err := b.LockWithin(partitionWait); err != nil {
				s.Violation("A's session kept the lock while the network held its packets: B could not take it in %v, nor could anyone for as long as the server sees the connection open", partitionWait)
			}
			link.Heal()
			a.ReleaseAfterFault()
			return
		}
		waitSessionGone(s, pool, apid, "the server ended A's session (idle): its advisory lock released")
		s.Must(b.Lock())
		s.HolderWrites(b, ship, dataB, "the database")
		link.Heal()
		a.MustDo(ship, dataA) // the write A had in flight
		a.ReleaseAfterFault()
		s.Must(b.Unlock())
		showOrder(s, pool)
	}
}

func TestLab14_BrokenPartitionKeepsAdvisoryLock(t *testing.T) {
	t.Parallel()
	labs.Broken(t, titleAdvisory, advisoryPartition(false), advFenced)
}

func TestLab14_BrokenIdleTimeoutUnfenced(t *testing.T) {
	t.Parallel()
	labs.Broken(t, titleAdvisory, advisoryPartition(true), advUnfenced)
}

func TestLab14_FixedIdleTimeoutFenced(t *testing.T) {
	t.Parallel()
	labs.Fixed(t, titleAdvisory, advisoryPartition(true), advFenced)
}

// Part 3: the chapter's double guarantee behind a Redis lock that failed.
//
// Lab 07's failover: A takes the Redis lock for order 1001 on the primary,
// the primary dies before replicating it, and B takes the same lock on the
// promoted replica. Both refund the order: both read it, then B writes,
// then A.
func behindFailedLock(s *labs.Scene, impl *labs.Impl) {
	_, pool := database(s)
	_, err := pool.Exec(s.Ctx, `CREATE TABLE IF NOT EXISTS `+refundsPlain+` (order_id text NOT NULL, by text NOT NULL)`)
	s.Must(err)
	s.TTL = 30 * time.Second
	r := s.Replicated(1)
	r.HoldBack(0)

	a := s.Client("A", impl, labs.Addrs(r.Primary.Addr()))
	s.Must(a.Lock())
	promoted := r.Failover("the Redis primary")
	b := s.Client("B", impl, labs.Addrs(promoted.Addr()))
	s.Must(b.Lock())
	s.Note("A and B both hold lock:order:1001 (lab 07)")

	a.MustDo(readRefund, "")
	b.MustDo(readRefund, "")
	b.MustDo(refund, refundB)
	a.MustDo(refund, refundA)

	var n int
	table := refundsOnce
	if impl == refundPlain {
		table = refundsPlain
	}
	col := "key"
	if table == refundsPlain {
		col = "order_id"
	}
	s.Must(pool.QueryRow(s.Ctx, `SELECT count(*) FROM `+table+` WHERE `+col+` IN ($1, $2)`, order, "refund:"+order).Scan(&n))
	s.Note("refunds recorded for order %s: %d", order, n)
	if n > 1 {
		s.Violation("order %s refunded %d times", order, n)
	}
	a.ReleaseAfterFault()
	s.Must(b.Unlock())
}

func TestLab14_BrokenDoubleRefund(t *testing.T) {
	t.Parallel()
	labs.Broken(t, titleBackstop, behindFailedLock, refundPlain)
}

func TestLab14_FixedVersionAndUniqueConstraint(t *testing.T) {
	t.Parallel()
	labs.Fixed(t, titleBackstop, behindFailedLock, refundGuard)
}
