package env

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/locklab/locklab/bench/registry"

	"github.com/go-zookeeper/zk"
	"github.com/jackc/pgx/v5/pgxpool"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/locklab/locklab/etcdlock"
	"github.com/locklab/locklab/internal/rig"
	"github.com/locklab/locklab/internal/sysclient"
	"github.com/locklab/locklab/pglock"
	"github.com/locklab/locklab/zklock"
)

// Others are the servers the locks on other systems run against: a
// 3-member etcd cluster, a 3-server ZooKeeper ensemble and a PostgreSQL
// server, each started by the rig the first time a selected lock connects,
// with their own defaults (fsync on, the JVM's own settings), and stopped
// with the Redis servers (servers.close). A bench that runs only Redis
// locks starts none of them.
var Others systemServers

type systemServers struct {
	mu   sync.Mutex // protects the fields below
	etcd *rig.Etcd
	zk   *rig.ZooKeeper
	pg   *rig.Postgres

	// The fault scoreboard's admin clients.
	etcdAdm *clientv3.Client
	zkAdm   *zklock.Session
	pgAdm   *pgxpool.Pool

	bouncers map[string]*rig.PgBouncer // by pool mode

	ledgerOnce sync.Mutex // serializes the ledger's CREATE TABLE
}

// errNotHere is returned by the starters in a fault scoreboard child
// process: a client process must never start servers of its own (a killed
// child would leave a whole cluster's directories behind, one per run).
var errNotHere = errors.New("a fault scoreboard client process starts no server: its lock dials the addresses it is given")

func inFaultChild() bool { return os.Getenv(FaultChildEnv) != "" }

// EtcdEndpoints returns the cluster's client addresses, starting it if it
// is not running.
func (s *systemServers) EtcdEndpoints() ([]string, error) {
	return startShared(s, &s.etcd, func() (*rig.Etcd, error) { return rig.NewEtcd(context.Background(), 3) },
		(*rig.Etcd).Endpoints, warmEtcd)
}

// ZooKeeperServers returns the ensemble's client addresses, starting it if it is
// not running.
func (s *systemServers) ZooKeeperServers() ([]string, error) {
	return startShared(s, &s.zk, func() (*rig.ZooKeeper, error) { return rig.NewZooKeeper(context.Background(), 3) },
		(*rig.ZooKeeper).Addrs, warmZooKeeper)
}

// PostgresDSN returns the PostgreSQL server's connection URL, starting it if it
// is not running.
func (s *systemServers) PostgresDSN() (string, error) {
	return startShared(s, &s.pg, func() (*rig.Postgres, error) { return rig.NewPostgres(context.Background()) },
		func(p *rig.Postgres) string { return p.DSN(p.Addr()) }, warmPostgres)
}

// sharedServer is one of systemServers' servers: a *rig.Etcd,
// *rig.ZooKeeper or *rig.Postgres, nil until started.
type sharedServer interface {
	comparable
	Close() error
}

// startShared returns where clients reach *running, one of s's servers
// (addr: its addresses, or a connection URL), first starting it (start)
// and warming it up (warm, given those addresses) when it is nil; all
// under s.mu. A server whose warm-up fails is closed and not kept, so the
// next call starts a new one. In a fault scoreboard child it starts
// nothing and returns errNotHere.
func startShared[S sharedServer, A any](s *systemServers, running *S, start func() (S, error), addr func(S) A, warm func(A) error) (A, error) {
	var none A
	if inFaultChild() {
		return none, errNotHere
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var stopped S
	if *running == stopped {
		srv, err := start()
		if err != nil {
			return none, err
		}
		if err := warm(addr(srv)); err != nil {
			_ = srv.Close()
			return none, err
		}
		*running = srv
	}
	return addr(*running), nil
}

// Versions describes the servers that ran, for the report.
func (s *systemServers) Versions(ctx context.Context) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	if s.etcd != nil {
		v, _ := s.etcd.Version(ctx)
		out = append(out, "etcd "+v+" (3 members, fsync on)")
	}
	if s.zk != nil {
		v, _ := s.zk.Version(ctx)
		out = append(out, "ZooKeeper "+v+" (3 servers, fsync on)")
	}
	if s.pg != nil {
		out = append(out, "PostgreSQL "+s.pg.Version()+" (fsync on)")
	}
	return out
}

// Close stops every server that was started.
func (s *systemServers) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return errors.Join(s.closeAdmins(), stopShared(&s.etcd), stopShared(&s.zk), stopShared(&s.pg)) // in this order
}

// stopShared closes *running, one of systemServers' servers, if it was
// started, and clears it. It returns Close's error. The caller holds
// systemServers.mu.
func stopShared[S sharedServer](running *S) error {
	var none S
	if *running == none {
		return nil
	}
	err := (*running).Close()
	*running = none
	return err
}

// warmUps is how many lock and unlock pairs a freshly started server
// serves before any run: its first requests (first leases, first log
// segments, JIT compilation) would otherwise stall the first run.
const warmUps = 50

func warmEtcd(endpoints []string) error {
	c, err := sysclient.Etcd(endpoints...)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), WarmupTimeout)
	defer cancel()
	return warmUp(ctx, "etcd", func(i int) []registry.Locker {
		return []registry.Locker{etcdlock.New(c, "/locklab/bench/warm/"+strconv.Itoa(i))}
	})
}

func warmZooKeeper(servers []string) error {
	s, err := zklock.Connect(servers, zkWarmSession)
	if err != nil {
		return err
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), WarmupTimeout)
	defer cancel()
	return warmUp(ctx, "ZooKeeper", func(i int) []registry.Locker {
		return []registry.Locker{zklock.New(s, "/locklab/bench/warm-"+strconv.Itoa(i%4))}
	})
}

func warmPostgres(dsn string) error {
	ctx, cancel := context.WithTimeout(context.Background(), WarmupTimeout)
	defer cancel()
	pool, err := sysclient.Postgres(ctx, dsn, 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	return warmUp(ctx, "PostgreSQL", func(i int) []registry.Locker {
		return []registry.Locker{pglock.New(pool, "warm"), pglock.NewRow(pool, "warm-"+strconv.Itoa(i%4))}
	})
}

// warmUp locks and unlocks, on ctx, each lock that locks(i) returns, for i
// from 0 to warmUps-1; what names the server in its error ("etcd").
func warmUp(ctx context.Context, what string, locks func(i int) []registry.Locker) error {
	for i := range warmUps {
		for _, m := range locks(i) {
			if err := m.Lock(ctx); err != nil {
				return fmt.Errorf("warm up %s: %w", what, err)
			}
			if err := m.Unlock(ctx); err != nil {
				return fmt.Errorf("warm up %s: %w", what, err)
			}
		}
	}
	return nil
}

// What the fault scoreboard needs of the servers (bench/faults/systems.go): an
// admin client per system, made on first use and closed with the servers,
// and the faults that act on the servers themselves.

// PgAddr returns the PostgreSQL server's address, starting it if it is not
// running.
func (s *systemServers) PgAddr() (string, error) {
	return startShared(s, &s.pg, func() (*rig.Postgres, error) { return rig.NewPostgres(context.Background()) },
		(*rig.Postgres).Addr, func(addr string) error { return warmPostgres(rig.PostgresDSN(addr)) })
}

// etcdAdmin returns a client of the cluster for the scoreboard's own
// requests.
func (s *systemServers) etcdAdmin() (*clientv3.Client, error) {
	eps, err := s.EtcdEndpoints()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.etcdAdm == nil {
		if s.etcdAdm, err = sysclient.Etcd(eps...); err != nil {
			return nil, err
		}
	}
	return s.etcdAdm, nil
}

// pgAdmin returns a pool on the PostgreSQL server for the scoreboard's own
// queries.
func (s *systemServers) pgAdmin(ctx context.Context) (*pgxpool.Pool, error) {
	addr, err := s.PgAddr()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pgAdm == nil {
		if s.pgAdm, err = sysclient.Postgres(ctx, rig.PostgresDSN(addr), 4); err != nil {
			return nil, err
		}
	}
	return s.pgAdm, nil
}

// zkAdmin returns a ZooKeeper connection for the scoreboard's own reads.
func (s *systemServers) zkAdmin() (*zk.Conn, error) {
	servers, err := s.ZooKeeperServers()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.zkAdm == nil {
		sess, err := zklock.Connect(servers, 10*time.Second)
		if err != nil {
			return nil, err
		}
		s.zkAdm = sess
	}
	return s.zkAdm.Conn(), nil
}

// closeAdmins closes the admin clients and the poolers; the caller holds
// s.mu.
func (s *systemServers) closeAdmins() error {
	var err error
	for mode, b := range s.bouncers {
		err = errors.Join(err, b.Close())
		delete(s.bouncers, mode)
	}
	if s.etcdAdm != nil {
		err = errors.Join(err, s.etcdAdm.Close())
		s.etcdAdm = nil
	}
	if s.pgAdm != nil {
		s.pgAdm.Close()
		s.pgAdm = nil
	}
	if s.zkAdm != nil {
		s.zkAdm.Close()
		s.zkAdm = nil
	}
	return err
}

// Crash kills sys's leader (etcd, ZooKeeper) or server (PostgreSQL) with
// SIGKILL and restarts it on its data, and says what it did.
func (s *systemServers) Crash(ctx context.Context, sys string) (string, error) {
	s.mu.Lock()
	etcd, zkEns, pg := s.etcd, s.zk, s.pg
	s.mu.Unlock()
	start := time.Now()
	took := func() string { return fmt.Sprintf("back in %d ms", time.Since(start).Milliseconds()) }
	switch {
	case sys == registry.SysEtcd && etcd != nil:
		m, err := etcd.Leader(ctx)
		if err != nil {
			return "", err
		}
		if err := m.Kill(); err != nil {
			return "", err
		}
		if err := m.Restart(ctx); err != nil {
			return "", err
		}
		return "etcd's leader " + m.Name() + ", " + took(), etcd.WaitHealthy(ctx)
	case sys == registry.SysZooKeeper && zkEns != nil:
		srv, err := zkEns.Leader(ctx)
		if err != nil {
			return "", err
		}
		if err := srv.Kill(); err != nil {
			return "", err
		}
		if err := srv.Restart(ctx); err != nil {
			return "", err
		}
		return fmt.Sprintf("ZooKeeper's leader zk%d, %s", srv.ID(), took()), nil
	case sys == registry.SysPostgres && pg != nil:
		if err := pg.Kill(); err != nil {
			return "", err
		}
		if err := pg.Restart(ctx); err != nil {
			return "", err
		}
		return "the PostgreSQL server (crash recovery), " + took(), nil
	}
	return "", fmt.Errorf("no %s server is running", sys)
}

// EtcdWaiterLease waits until the lock on key has a second claim in line
// (a waiter behind the holder) and returns that claim's lease.
func (s *systemServers) EtcdWaiterLease(ctx context.Context, key string) (clientv3.LeaseID, error) {
	c, err := s.etcdAdmin()
	if err != nil {
		return 0, err
	}
	for {
		resp, err := c.Get(ctx, key+"/", clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
		if err == nil {
			var line []int64 // the claims' leases, oldest first (not withdrawn claims' tombstones, k/~...)
			for _, kv := range resp.Kvs {
				if !strings.HasPrefix(string(kv.Key), key+"/~") {
					line = append(line, kv.Lease)
				}
			}
			if len(line) >= 2 {
				return clientv3.LeaseID(line[1]), nil
			}
		}
		if !SleepCtx(ctx, 5*time.Millisecond) {
			return 0, fmt.Errorf("no waiter's claim under %s/: %w", key, ctx.Err())
		}
	}
}

// EtcdRevoke revokes a lease.
func (s *systemServers) EtcdRevoke(ctx context.Context, lease clientv3.LeaseID) error {
	c, err := s.etcdAdmin()
	if err != nil {
		return err
	}
	_, err = c.Revoke(ctx, lease)
	return err
}

// ZkWaitLine waits until path has n children (claims in line).
func (s *systemServers) ZkWaitLine(ctx context.Context, path string, n int) error {
	c, err := s.zkAdmin()
	if err != nil {
		return err
	}
	for {
		kids, _, err := c.Children(path)
		if err == nil && len(kids) >= n {
			return nil
		}
		if !SleepCtx(ctx, 5*time.Millisecond) {
			return fmt.Errorf("%s has not %d claims in line: %w", path, n, ctx.Err())
		}
	}
}

// PgWaiter waits until a backend is blocked by backend holder and returns
// its pid.
func (s *systemServers) PgWaiter(ctx context.Context, holder uint32) (uint32, error) {
	p, err := s.pgAdmin(ctx)
	if err != nil {
		return 0, err
	}
	for {
		var pid uint32
		err := p.QueryRow(ctx, `SELECT pid FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid)) LIMIT 1`, int32(holder)).Scan(&pid)
		if err == nil {
			return pid, nil
		}
		if !SleepCtx(ctx, 5*time.Millisecond) {
			return 0, fmt.Errorf("no backend waits behind pid %d: %w", holder, ctx.Err())
		}
	}
}

// PgTerminate ends a backend with pg_terminate_backend.
func (s *systemServers) PgTerminate(ctx context.Context, pid uint32) error {
	p, err := s.pgAdmin(ctx)
	if err != nil {
		return err
	}
	var ok bool
	if err := p.QueryRow(ctx, `SELECT pg_terminate_backend($1::int)`, int32(pid)).Scan(&ok); err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("pg_terminate_backend(%d) found no such backend", pid)
	}
	return nil
}

// PgLedger makes the ledger table of schedule 13, once.
func (s *systemServers) PgLedger(ctx context.Context) error {
	p, err := s.pgAdmin(ctx)
	if err != nil {
		return err
	}
	s.ledgerOnce.Lock()
	defer s.ledgerOnce.Unlock()
	_, err = p.Exec(ctx, `CREATE TABLE IF NOT EXISTS locklab_faults_ledger (k text NOT NULL, seq bigint NOT NULL)`)
	return err
}

// PgLedgerCount returns how many distinct entries the ledger has for k.
func (s *systemServers) PgLedgerCount(ctx context.Context, k string) (int64, error) {
	p, err := s.pgAdmin(ctx)
	if err != nil {
		return 0, err
	}
	var n int64
	err = p.QueryRow(ctx, `SELECT count(DISTINCT seq) FROM locklab_faults_ledger WHERE k = $1`, k).Scan(&n)
	return n, err
}

// PgBouncer returns the address of a PgBouncer (the rig's, PgBouncer's
// own pool size) in front of the PostgreSQL server in mode
// (rig.PoolTransaction or rig.PoolSession), started on first use and
// closed with the servers.
func (s *systemServers) PgBouncer(ctx context.Context, mode string) (string, error) {
	if _, err := s.PgAddr(); err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.bouncers[mode]; b != nil {
		return b.Addr(), nil
	}
	b, err := rig.NewPgBouncer(ctx, s.pg, mode)
	if err != nil {
		return "", err
	}
	if s.bouncers == nil {
		s.bouncers = map[string]*rig.PgBouncer{}
	}
	s.bouncers[mode] = b
	return b.Addr(), nil
}

// SleepCtx sleeps d or until ctx ends; it reports whether d passed.
func SleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// FaultChildEnv carries a child's actorSpec; when set, the program serves
// that actor instead of running the bench (see main and TestMain).
const FaultChildEnv = "LOCKLAB_BENCH_FAULT_CHILD"

// WarmupTimeout bounds the warm-up pass of every client.
const WarmupTimeout = 10 * time.Second

// zkWarmSession is the session timeout of the warm-up's ZooKeeper clients:
// the bench's default lease.
const zkWarmSession = 8 * time.Second
