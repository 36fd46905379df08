package zklock_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/locklab/locklab/internal/locktest"
	"github.com/locklab/locklab/internal/rig"
	"github.com/locklab/locklab/zklock"
)

// servers are the client addresses of the ZooKeeper server the package's
// tests and Examples share; tests that kill, pause or partition servers
// start their own.
var servers []string

func TestMain(m *testing.M) {
	rig.MainWith(m,
		func() (*rig.ZooKeeper, error) {
			return rig.NewZooKeeper(context.Background(), 1, rig.WithZooKeeperForTests())
		},
		func(z *rig.ZooKeeper) { servers = z.Addrs() })
}

var pathSeq atomic.Int64

// lockPath returns a lock path no other test uses.
func lockPath(t testing.TB) string {
	return fmt.Sprintf("/locklab/test/%s-%d", t.Name(), pathSeq.Add(1))
}

// session returns a session on addrs (the shared server by default), closed
// when the test ends.
func session(t testing.TB, timeout time.Duration, addrs ...string) *zklock.Session {
	t.Helper()
	if len(addrs) == 0 {
		addrs = servers
	}
	s, err := zklock.Connect(addrs, timeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// children returns the children of path, oldest first.
func children(t testing.TB, s *zklock.Session, path string) []string {
	t.Helper()
	c, _, err := s.Conn().Children(path)
	if err == zk.ErrNoNode {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(c, func(a, b string) int { return cmpSeq(a, b) })
	return c
}

func cmpSeq(a, b string) int {
	sa, sb := a[len(a)-10:], b[len(b)-10:]
	switch {
	case sa < sb:
		return -1
	case sa > sb:
		return 1
	}
	return 0
}

// kind is zklock as the shared scenarios of internal/locktest see it: its
// line is the lock's children, by full path.
var kind = locktest.Kind[*zklock.Session]{
	Name: "zklock",
	Conn: func(t *testing.T) *zklock.Session { return session(t, timeout) },
	New: func(s *zklock.Session, p string, o locktest.Options) locktest.Fenced {
		return zklock.New(s, p, zklock.WithHook(o.Hook), zklock.WithObserver(o.Observer))
	},
	ErrNotHeld:     zklock.ErrNotHeld,
	ErrNotObtained: zklock.ErrNotObtained,
	Line: func(t testing.TB, s *zklock.Session, p string) []string {
		var line []string
		for _, c := range children(t, s, p) {
			line = append(line, p+"/"+c)
		}
		return line
	},
	Claim:       func(l locktest.Fenced) string { return l.(*zklock.Mutex).Node() },
	HookClaimed: zklock.HookClaimed,
}
