package zklock_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/locklab/locklab/internal/locktest"
	"github.com/locklab/locklab/internal/rig"
	"github.com/locklab/locklab/zklock"
)

// userTimeout is the session timeout of a's faulty sessions in the
// user-world suite: short, so that a session expires within a subtest.
const userTimeout = 3 * time.Second

// paths maps each faulty session of the suite to its faulty path.
var paths sync.Map // *zklock.Session -> faulty

func pathOf(t *testing.T, s *zklock.Session) faulty {
	t.Helper()
	f, ok := paths.Load(s)
	if !ok {
		t.Fatal("not a faulty session of the suite")
	}
	return f.(faulty)
}

// TestUserWorld runs the shared user-world fault suite (internal/locktest)
// over zklock on go-zookeeper's default options. Each subtest has a
// ZooKeeper server of its own, started by its first connection and
// stopped when it ends (one fault kills and restarts the server, and the
// suite checks that nothing started in a subtest outlives it): a's
// session goes through a faulty path (wire_test.go), b's straight to the
// server.
func TestUserWorld(t *testing.T) {
	var servers sync.Map // the subtest's *testing.T -> *rig.ZooKeeper
	zkOf := func(t *testing.T) *rig.ZooKeeper {
		t.Helper()
		if z, ok := servers.Load(t); ok {
			return z.(*rig.ZooKeeper)
		}
		z := rig.StartZooKeeper(t, 1, rig.WithZooKeeperForTests())
		servers.Store(t, z)
		t.Cleanup(func() { servers.Delete(t) })
		return z
	}
	k := kind
	k.Conn = func(t *testing.T) *zklock.Session { return session(t, timeout, zkOf(t).Addrs()...) }

	// connected waits until s's client has a session (a new one if old is
	// not 0 and the fault ended it).
	connected := func(t *testing.T, s *zklock.Session, what string) {
		t.Helper()
		locktest.Eventually(t, 60*time.Second, what, func() bool {
			return s.Conn().State() == zk.StateHasSession
		})
	}
	// disconnected waits until s's client has seen its connection drop.
	disconnected := func(t *testing.T, s *zklock.Session) {
		t.Helper()
		locktest.Eventually(t, 10*time.Second, "a's client sees its connection drop", func() bool {
			return s.Conn().State() != zk.StateHasSession
		})
	}
	var probes atomic.Int64

	w := locktest.World[*zklock.Session]{
		Faulty: func(t *testing.T) *zklock.Session {
			f := faultyPath(t, zkOf(t).Addrs()[0])
			s := session(t, userTimeout, f.Addr())
			paths.Store(s, f)
			t.Cleanup(func() { paths.Delete(s) })
			return s
		},
		Call:    10 * time.Second,
		Recover: 6 * userTimeout,
		Faults: []locktest.Fault[*zklock.Session]{
			{
				// The connection drops right after the create reached
				// the server: go-zookeeper does not send it again; the
				// protected create finds the child by its token.
				Name:   "create reply lost",
				During: locktest.DuringLock,
				Inject: func(t *testing.T, s *zklock.Session) func() {
					f := pathOf(t, s)
					fired := f.wire.DropReply(opCreate, "/lock-")
					return func() {
						select {
						case <-fired:
						default:
							t.Errorf("the create's reply was not lost")
						}
						connected(t, s, "a's client is back")
					}
				},
			},
			{
				// a's network is partitioned past the session timeout
				// while a locks; once it heals, go-zookeeper learns the
				// session expired and makes a new one, on which a locks
				// again.
				Name:   "session expired mid-Lock",
				During: locktest.DuringLock,
				Ends:   true,
				Inject: func(t *testing.T, s *zklock.Session) func() {
					f := pathOf(t, s)
					probe := fmt.Sprintf("/locklab-probe-%d", probes.Add(1))
					if _, err := s.Conn().Create(probe, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
						t.Fatal(err)
					}
					old := s.ID()
					f.proxy.Blackhole()
					return func() {
						clean := session(t, timeout, zkOf(t).Addrs()...)
						locktest.Eventually(t, 10*userTimeout, "the server expires a's session", func() bool {
							ok, _, err := clean.Conn().Exists(probe)
							return err == nil && !ok
						})
						f.proxy.Heal()
						locktest.Eventually(t, 60*time.Second, "a's client has a new session", func() bool {
							return s.Conn().State() == zk.StateHasSession && s.ID() != old
						})
					}
				},
			},
			{
				// a's connection is reset while it waits in line and
				// comes back on the same session.
				Name:   "connection blip",
				During: locktest.DuringWait,
				Inject: func(t *testing.T, s *zklock.Session) func() {
					f := pathOf(t, s)
					f.proxy.Reset()
					disconnected(t, s)
					return func() {
						f.proxy.Heal()
						connected(t, s, "a's client is back")
					}
				},
			},
			{
				// The delete reaches the server; its reply is lost.
				Name:   "delete reply lost",
				During: locktest.DuringUnlock,
				Inject: func(t *testing.T, s *zklock.Session) func() {
					f := pathOf(t, s)
					f.wire.DropReply(opDelete, "/lock-")
					return func() { connected(t, s, "a's client is back") }
				},
			},
			{
				// The server is SIGKILLed while a holds, and restarted
				// with its data: sessions are kept in the data, so a's
				// session, and its child, live on.
				Name:   "server killed and restarted",
				During: locktest.DuringHold,
				Inject: func(t *testing.T, s *zklock.Session) func() {
					server := zkOf(t).Servers()[0]
					if err := server.Kill(); err != nil {
						t.Fatal(err)
					}
					return func() {
						if err := server.Restart(context.Background()); err != nil {
							t.Fatal(err)
						}
						connected(t, s, "a's client is back")
					}
				},
			},
			{
				// 800 ms each way on a's connection, then a partition:
				// the session expires, and a's Done must close before b
				// holds the lock.
				Name:   "latency then partition",
				During: locktest.DuringHold,
				Ends:   true,
				Inject: func(t *testing.T, s *zklock.Session) func() {
					f := pathOf(t, s)
					const latency = 800 * time.Millisecond
					f.proxy.SetLatency(latency)
					time.Sleep(2 * latency) // the latency is the lesson: a round trip under it
					f.proxy.Blackhole()
					return func() {
						f.proxy.SetLatency(0)
						f.proxy.Heal()
						connected(t, s, "a's client has a session again")
					}
				},
			},
		},
	}
	locktest.UserWorld(t, k, w, lockPath)
}
