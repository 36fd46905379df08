package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"

	"github.com/locklab/locklab/etcdlock"
	"github.com/locklab/locklab/internal/rig"
	"github.com/locklab/locklab/internal/sysclient"
	"github.com/locklab/locklab/pglock"
	"github.com/locklab/locklab/zklock"
)

// others are the servers the locks on other systems run against: a
// 3-member etcd cluster, a 3-server ZooKeeper ensemble and a PostgreSQL
// server, each started by the rig the first time a selected lock connects,
// with their own defaults (fsync on, the JVM's own settings), and stopped
// with the Redis servers (servers.close). A bench that runs only Redis
// locks starts none of them.
var others systemServers

type systemServers struct {
	mu   sync.Mutex // protects the fields below
	etcd *rig.Etcd
	zk   *rig.ZooKeeper
	pg   *rig.Postgres
}

// errNotHere is returned by the starters in a fault scoreboard child
// process: a client process must never start servers of its own (a killed
// child would leave a whole cluster's directories behind, one per run).
var errNotHere = errors.New("the locks on etcd, ZooKeeper and PostgreSQL do not run under the fault scoreboard: " + otherNoFaults)

func inFaultChild() bool { return os.Getenv(faultChildEnv) != "" }

// etcdEndpoints returns the cluster's client addresses, starting it if it
// is not running.
func (s *systemServers) etcdEndpoints() ([]string, error) {
	return startShared(s, &s.etcd, func() (*rig.Etcd, error) { return rig.NewEtcd(context.Background(), 3) },
		(*rig.Etcd).Endpoints, warmEtcd)
}

// zkServers returns the ensemble's client addresses, starting it if it is
// not running.
func (s *systemServers) zkServers() ([]string, error) {
	return startShared(s, &s.zk, func() (*rig.ZooKeeper, error) { return rig.NewZooKeeper(context.Background(), 3) },
		(*rig.ZooKeeper).Addrs, warmZooKeeper)
}

// pgDSN returns the PostgreSQL server's connection URL, starting it if it
// is not running.
func (s *systemServers) pgDSN() (string, error) {
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

// versions describes the servers that ran, for the report.
func (s *systemServers) versions(ctx context.Context) []string {
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

// close stops every server that was started.
func (s *systemServers) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return errors.Join(stopShared(&s.etcd), stopShared(&s.zk), stopShared(&s.pg)) // in this order
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

// otherScenarios are the scenarios the locks on other systems run in.
var otherScenarios = []string{scUncontended, scContended, scKeys}

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
	ctx, cancel := context.WithTimeout(context.Background(), warmupTimeout)
	defer cancel()
	return warmUp(ctx, "etcd", func(i int) []locker {
		return []locker{etcdlock.New(c, "/locklab/bench/warm/"+strconv.Itoa(i))}
	})
}

func warmZooKeeper(servers []string) error {
	s, err := zklock.Connect(servers, defaultTTL)
	if err != nil {
		return err
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), warmupTimeout)
	defer cancel()
	return warmUp(ctx, "ZooKeeper", func(i int) []locker {
		return []locker{zklock.New(s, "/locklab/bench/warm-"+strconv.Itoa(i%4))}
	})
}

func warmPostgres(dsn string) error {
	ctx, cancel := context.WithTimeout(context.Background(), warmupTimeout)
	defer cancel()
	pool, err := sysclient.Postgres(ctx, dsn, 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	return warmUp(ctx, "PostgreSQL", func(i int) []locker {
		return []locker{pglock.New(pool, "warm"), pglock.NewRow(pool, "warm-"+strconv.Itoa(i%4))}
	})
}

// warmUp locks and unlocks, on ctx, each lock that locks(i) returns, for i
// from 0 to warmUps-1; what names the server in its error ("etcd").
func warmUp(ctx context.Context, what string, locks func(i int) []locker) error {
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

// otherNoFaults is why the fault scoreboard does not run the locks on
// other systems: its schedules fault Redis servers (a promoted replica, a
// restart without data, eviction), which these locks do not use, so every
// cell would read "safe" for a fault they never met. Their own faults
// (paused holders, partitions, a paused or killed leader, idle timeouts)
// are in labs 13 and 14 and in their packages' tests.
const otherNoFaults = "its fault schedules act on Redis servers, which this lock does not use; see labs 13 and 14"
