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
	if inFaultChild() {
		return nil, errNotHere
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.etcd == nil {
		e, err := rig.NewEtcd(context.Background(), 3)
		if err != nil {
			return nil, err
		}
		if err := warmEtcd(e.Endpoints()); err != nil {
			_ = e.Close()
			return nil, err
		}
		s.etcd = e
	}
	return s.etcd.Endpoints(), nil
}

// zkServers returns the ensemble's client addresses, starting it if it is
// not running.
func (s *systemServers) zkServers() ([]string, error) {
	if inFaultChild() {
		return nil, errNotHere
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.zk == nil {
		z, err := rig.NewZooKeeper(context.Background(), 3)
		if err != nil {
			return nil, err
		}
		if err := warmZooKeeper(z.Addrs()); err != nil {
			_ = z.Close()
			return nil, err
		}
		s.zk = z
	}
	return s.zk.Addrs(), nil
}

// pgDSN returns the PostgreSQL server's connection URL, starting it if it
// is not running.
func (s *systemServers) pgDSN() (string, error) {
	if inFaultChild() {
		return "", errNotHere
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pg == nil {
		p, err := rig.NewPostgres(context.Background())
		if err != nil {
			return "", err
		}
		if err := warmPostgres(p.DSN(p.Addr())); err != nil {
			_ = p.Close()
			return "", err
		}
		s.pg = p
	}
	return s.pg.DSN(s.pg.Addr()), nil
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
	var errs []error
	if s.etcd != nil {
		errs = append(errs, s.etcd.Close())
		s.etcd = nil
	}
	if s.zk != nil {
		errs = append(errs, s.zk.Close())
		s.zk = nil
	}
	if s.pg != nil {
		errs = append(errs, s.pg.Close())
		s.pg = nil
	}
	return errors.Join(errs...)
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
	for i := range warmUps {
		m := etcdlock.New(c, "/locklab/bench/warm/"+strconv.Itoa(i))
		if err := m.Lock(ctx); err != nil {
			return fmt.Errorf("warm up etcd: %w", err)
		}
		if err := m.Unlock(ctx); err != nil {
			return fmt.Errorf("warm up etcd: %w", err)
		}
	}
	return nil
}

func warmZooKeeper(servers []string) error {
	s, err := zklock.Connect(servers, defaultTTL)
	if err != nil {
		return err
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), warmupTimeout)
	defer cancel()
	for i := range warmUps {
		m := zklock.New(s, "/locklab/bench/warm-"+strconv.Itoa(i%4))
		if err := m.Lock(ctx); err != nil {
			return fmt.Errorf("warm up ZooKeeper: %w", err)
		}
		if err := m.Unlock(ctx); err != nil {
			return fmt.Errorf("warm up ZooKeeper: %w", err)
		}
	}
	return nil
}

func warmPostgres(dsn string) error {
	ctx, cancel := context.WithTimeout(context.Background(), warmupTimeout)
	defer cancel()
	pool, err := sysclient.Postgres(ctx, dsn, 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	for i := range warmUps {
		for _, m := range []locker{pglock.New(pool, "warm"), pglock.NewRow(pool, "warm-"+strconv.Itoa(i%4))} {
			if err := m.Lock(ctx); err != nil {
				return fmt.Errorf("warm up PostgreSQL: %w", err)
			}
			if err := m.Unlock(ctx); err != nil {
				return fmt.Errorf("warm up PostgreSQL: %w", err)
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
