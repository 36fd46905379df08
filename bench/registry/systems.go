package registry

import (
	"errors"

	"github.com/locklab/locklab/fencing"
)

// KeyRoot prefixes every key the bench writes, so leftovers can be found
// (and deleted) with one SCAN pattern.
const KeyRoot = "locklab:bench:"

// Systems a lock runs on (Lock.System), as the fault schedules name them.
const (
	SysRedis     = "redis"
	SysEtcd      = "etcd"
	SysZooKeeper = "zookeeper"
	SysPostgres  = "postgres"
)

// SystemOf returns the system l runs on (Redis for a lock registered
// without one, as a test's may be).
func SystemOf(l *Lock) string {
	if l.System == "" {
		return SysRedis
	}
	return l.System
}

// OtherScenarios are the speed scenarios the locks on etcd, ZooKeeper and
// PostgreSQL run in (rtt's proxies sit in front of the Redis servers only).
// The bench's scenario names; TestRegistryTraits checks they are known.
var OtherScenarios = []string{"uncontended", "contended", "keys"}

// Servers starts, once, the bench's own servers of the other systems and
// says where they are. The bench gives its own (Env.Servers).
type Servers interface {
	EtcdEndpoints() ([]string, error)
	ZooKeeperServers() ([]string, error)
	PostgresDSN() (string, error)
}

// systemAddrs returns the servers a lock on another system dials: under
// the fault scoreboard (e.Users set) the addresses it was given, which may
// be proxies, and in a child process the only ones it may use; otherwise
// the bench's own servers, started by start if they are not running.
func (e Env) systemAddrs(start func(Servers) ([]string, error)) ([]string, error) {
	if e.Users != nil {
		if len(e.Addrs) == 0 {
			return nil, errors.New("no server address given")
		}
		return e.Addrs, nil
	}
	if e.Servers == nil {
		return nil, errors.New("no servers of the other systems in this run")
	}
	return start(e.Servers)
}

// lossSignal is a lock adapter that says when the lock is lost.
type lossSignal interface{ lost() <-chan struct{} }

// Lost returns the channel that closes when l is lost, and whether l says
// so at all (a lock registered with LossSignal).
func Lost(l Locker) (<-chan struct{}, bool) {
	s, ok := l.(lossSignal)
	if !ok {
		return nil, false
	}
	return s.lost(), true
}

// Tokens returns the lock's owner token and fencing token, as far as the
// lock shows them.
func Tokens(l Locker) (tok string, fence uint64) {
	switch t := l.(type) {
	case interface{ Token() fencing.Token }:
		fence = uint64(t.Token())
	case interface{ Fence() uint64 }:
		fence = t.Fence()
	case interface{ Token() string }:
		tok = t.Token()
	case interface{ token() string }:
		tok = t.token()
	}
	return tok, fence
}
