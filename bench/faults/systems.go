package faults

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/locklab/locklab/bench/env"
	"github.com/locklab/locklab/bench/registry"
	"github.com/locklab/locklab/internal/history"
	"github.com/locklab/locklab/internal/rig"
)

// The locks on etcd, ZooKeeper and PostgreSQL meet the schedules that
// apply to them on the bench's own servers for those systems (a 3-member
// etcd cluster, a 3-server ZooKeeper ensemble, one PostgreSQL server:
// systems.go), with real faults: the paused and the killed holder are
// child processes, latency is the fault proxy's, a lost reply or a late
// request is a rawNet's (rawnet.go), and a crash is SIGKILL to the
// leader or the server. Their protected resource is the same counter on
// the resource server, written through the fenced store with their
// fencing tokens (Fence). Issue 34 adds four schedules for them: a server
// or leader killed and restarted with its data, a session that ends while
// a Lock is in flight, PgBouncer in front of PostgreSQL, and the isolation
// level of the row lock's transaction.

// systemAddrs returns the addresses a run's clients dial for its lock's
// system: etcd's members, ZooKeeper's servers, PostgreSQL's server (or
// whatever the event put in its place, such as a pooler), starting the
// servers if they are not running.
func (ev *Event) systemAddrs(sys string) ([]string, error) {
	ev.mu.Lock()
	over, ok := ev.sysAddrs[sys]
	ev.mu.Unlock()
	if ok {
		return over, nil
	}
	switch sys {
	case registry.SysEtcd:
		return env.Others.EtcdEndpoints()
	case registry.SysZooKeeper:
		return env.Others.ZooKeeperServers()
	case registry.SysPostgres:
		a, err := env.Others.PgAddr()
		if err != nil {
			return nil, err
		}
		return []string{a}, nil
	}
	return nil, fmt.Errorf("faults: no system %q", sys)
}

// etcdMinLease is the shortest lease etcd grants with its default election
// timeout (1s): 1.5 election timeouts, rounded up to whole seconds; a
// shorter TTL gets this one.
const etcdMinLease = 2 * time.Second

// Lease returns the lease the run's lock actually has: the schedule's TTL,
// or etcd's minimum when it is longer.
func (r *FaultRun) Lease() time.Duration {
	if registry.SystemOf(r.Im) == registry.SysEtcd {
		return max(r.Ev.Sch.TTL, etcdMinLease)
	}
	return r.Ev.Sch.TTL
}

// StuckAfter is the run's bound on a stall: the schedule's, counted in
// leases, so a lock whose lease is longer than the schedule's TTL (etcd's
// shortest is 2 s) gets as many of its own leases.
func (r *FaultRun) StuckAfter() time.Duration {
	// In float64: the product of two Durations overflows int64 nanoseconds
	// past about 9.2 s² (6 s × 2 s came out negative).
	return time.Duration(float64(r.Ev.Sch.StuckAfter) / float64(r.Ev.Sch.TTL) * float64(r.Lease()))
}

// runCrash: schedule 10.
func runCrash(ev *Event) error {
	if err := ev.start(); err != nil {
		return err
	}
	systems := map[string]bool{}
	for _, r := range ev.live() {
		systems[registry.SystemOf(r.Im)] = true
	}
	return ev.standard(func() error {
		ev.faultAll("kill -9 etcd's leader, ZooKeeper's leader and the PostgreSQL server; each restarts on its data")
		var wg sync.WaitGroup
		var mu sync.Mutex
		var errs []error
		var what []string
		for sys := range systems {
			wg.Go(func() {
				w, err := env.Others.Crash(ev.ctx, sys)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", sys, err))
				}
				if w != "" {
					what = append(what, w)
				}
			})
		}
		wg.Wait()
		slices.Sort(what)
		ev.faultAll("restarted: %s", strings.Join(what, "; "))
		return errors.Join(errs...)
	})
}

// runExpiry: schedule 11.
func runExpiry(ev *Event) error {
	if err := ev.start(); err != nil {
		return err
	}
	ev.each(func(r *FaultRun) { r.expiry() })
	return nil
}

// expiry is one run of schedule 11 (see its what).
func (r *FaultRun) expiry() {
	ev := r.Ev
	ctx := ev.ctx
	bound := 4*ev.Sch.TTL + 6*time.Second
	a := r.a.(*actor)
	cHolds, injected := make(chan struct{}), make(chan struct{})
	var once sync.Once
	held := func() { once.Do(func() { close(cHolds) }) }
	var wg sync.WaitGroup
	wg.Go(func() {
		defer held()
		if !r.c.lock(ctx, bound) {
			return
		}
		r.c.event(history.Event{Kind: history.Enter})
		if r.c.readRes(ctx) == nil {
			r.c.writeRes(ctx)
		}
		held()
		select {
		case <-injected:
		case <-time.After(bound):
		case <-ctx.Done():
		}
		r.c.event(history.Event{Kind: history.Exit})
		r.c.unlock()
	})
	<-cHolds
	wg.Go(func() { a.cycle(ctx, bound, holdB, nil) })
	err := r.expireWaiter(ctx)
	if err != nil {
		r.fault("(the expiry was not injected: %s)", shortErr(err))
	}
	close(injected)
	wg.Go(func() {
		if env.SleepCtx(ctx, 20*time.Millisecond) {
			r.b.cycle(ctx, bound, holdB, nil)
		}
	})
	wg.Wait()
	if err != nil && r.failed == "" {
		r.failed = "expiry: " + longErr(err)
	}
}

// expireWaiter waits until A's claim is in line behind C's hold and ends
// A's session on the server, the way the run's system does it.
func (r *FaultRun) expireWaiter(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	switch registry.SystemOf(r.Im) {
	case registry.SysEtcd:
		lease, err := env.Others.EtcdWaiterLease(ctx, r.key)
		if err != nil {
			return err
		}
		if err := env.Others.EtcdRevoke(ctx, lease); err != nil {
			return err
		}
		r.fault("A's claim is in line; etcd revokes its lease %x (as when it expires)", lease)
	case registry.SysZooKeeper:
		if err := env.Others.ZkWaitLine(ctx, registry.ZKPath(r.key), 2); err != nil {
			return err
		}
		cut := 3 * r.Ev.Sch.TTL
		for _, p := range r.aNet[:len(r.aNet)-1] {
			p.Blackhole()
		}
		r.fault("A's claim is in line; A is cut off from ZooKeeper for %v, three times its %v session timeout", cut, r.Ev.Sch.TTL)
		ok := env.SleepCtx(ctx, cut)
		for _, p := range r.aNet[:len(r.aNet)-1] {
			p.Heal()
		}
		r.fault("A's network healed (its session has expired on the servers)")
		if !ok {
			return ctx.Err()
		}
	case registry.SysPostgres:
		pider, ok := r.c.l.(interface{ PID() uint32 })
		if !ok {
			return errors.New("the lock does not tell its backend's pid")
		}
		pid, err := env.Others.PgWaiter(ctx, pider.PID())
		if err != nil {
			return err
		}
		if err := env.Others.PgTerminate(ctx, pid); err != nil {
			return err
		}
		r.fault("A's Lock waits behind C; PostgreSQL terminates A's backend (pid %d, pg_terminate_backend)", pid)
	default:
		return fmt.Errorf("no session expiry for %s", r.Im.Name)
	}
	return nil
}

// runPooler: schedule 12.
func runPooler(ev *Event) error {
	mode := []string{rig.PoolTransaction, rig.PoolSession, rig.PoolStatement}[ev.index%3]
	addr, err := env.Others.PgBouncer(ev.ctx, mode)
	if err != nil {
		return err
	}
	ev.mu.Lock()
	ev.sysAddrs = map[string][]string{registry.SysPostgres: {addr}}
	ev.mu.Unlock()
	if err := ev.start(); err != nil {
		return err
	}
	ev.faultAll("every client reaches PostgreSQL through PgBouncer in %s pooling", mode)
	ev.each(func(r *FaultRun) { r.cycleAll(4*ev.Sch.TTL+2*time.Second, nil) })
	return nil
}

// isolationLevel returns the isolation level of run i of schedule 13.
func isolationLevel(i int) string {
	if i%2 == 1 {
		return "serializable"
	}
	return "repeatable read"
}

// runIsolation: schedule 13.
func runIsolation(ev *Event) error {
	level := isolationLevel(ev.index)
	ev.users.PGSettings = map[string]string{"default_transaction_isolation": level}
	if err := env.Others.PgLedger(ev.ctx); err != nil {
		return err
	}
	for _, r := range ev.runs {
		r.ledger = true
	}
	if err := ev.start(); err != nil {
		return err
	}
	ev.faultAll("default_transaction_isolation = %s on every client's sessions", level)
	ev.each(func(r *FaultRun) {
		var wg sync.WaitGroup
		for i, a := range []*actor{r.a.(*actor), r.b, r.c} {
			wg.Go(func() {
				if env.SleepCtx(ev.ctx, time.Duration(i)*20*time.Millisecond) {
					a.ledgerCycle(ev.ctx, 4*ev.Sch.TTL+2*time.Second, holdB)
				}
			})
		}
		wg.Wait()
	})
	return nil
}

// ledgerCycle is a turn at the ledger: take the row lock, count the
// ledger's entries for the key and append the next one through the lock's
// transaction, hold, release (COMMIT). The write is recorded at the
// append, accepted if the COMMIT returned nil.
func (a *actor) ledgerCycle(ctx context.Context, bound, hold time.Duration) {
	txer, ok := a.l.(registry.TxLocker)
	if !ok {
		a.note("this lock has no transaction to work in")
		return
	}
	if !a.lock(ctx, bound) {
		return
	}
	a.event(history.Event{Kind: history.Enter})
	tok, fence := registry.Tokens(a.l)
	var n int64
	var at time.Duration
	tx := txer.Tx()
	err := tx.QueryRow(ctx, `SELECT count(*) FROM locklab_faults_ledger WHERE k = $1`, a.spec.Res).Scan(&n)
	if err == nil {
		a.note("read %d entries", n)
		at = a.clock.Now()
		_, err = tx.Exec(ctx, `INSERT INTO locklab_faults_ledger (k, seq) VALUES ($1, $2)`, a.spec.Res, n+1)
	}
	if err != nil {
		a.note("work failed: %s", shortErr(err))
	}
	if hold > 0 {
		select {
		case <-time.After(hold):
		case <-ctx.Done():
		}
	}
	a.event(history.Event{Kind: history.Exit})
	a.halt()
	uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	uerr := a.l.Unlock(uctx)
	cancel()
	rel := history.Event{Kind: history.Release, OK: uerr == nil, Token: tok}
	if uerr != nil {
		rel.Text = shortErr(uerr)
	}
	a.event(rel)
	_ = fence
	if err == nil {
		w := history.Event{Kind: history.Write, At: at, OK: uerr == nil, Token: tok, Text: fmt.Sprint(n + 1)}
		if uerr != nil {
			w.Text += " (not committed)"
		}
		a.event(w)
	}
}
