package zklock_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/locklab/locklab/internal/rig"
	"github.com/locklab/locklab/zklock"
)

// servers are the client addresses of the ZooKeeper server the package's
// tests and Examples share; tests that kill, pause or partition servers
// start their own.
var servers []string

func TestMain(m *testing.M) {
	rig.MainWith(m, func() (func(), error) {
		z, err := rig.NewZooKeeper(context.Background(), 1, rig.WithZooKeeperForTests())
		if err != nil {
			return nil, err
		}
		servers = z.Addrs()
		return func() { _ = z.Close() }, nil
	})
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

// eventually polls cond every 10ms for up to d.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not true after %v: %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
