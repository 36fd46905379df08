package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/rig"
	"github.com/locklab/locklab/redlock"
)

// addrs are the five servers shared by the tests and Examples; admin holds
// one client per server for checks and cleanup, closed with the servers.
var (
	addrs []string
	admin []*redis.Client
)

func TestMain(m *testing.M) {
	rig.Main(m, 5, func(nodes []*rig.Node) {
		for _, n := range nodes {
			addrs = append(addrs, n.Addr())
			admin = append(admin, n.Client())
		}
	})
}

// startNodes starts n servers for one test (the rig guarantees each
// address is answered by its own process).
func startNodes(t *testing.T, n int) []*rig.Node {
	t.Helper()
	return rig.StartN(t, n)
}

var keySeq atomic.Int64

// newKey returns a key no other test uses and deletes it, and its wait
// queue, from the shared servers when the test ends.
func newKey(t testing.TB) string {
	t.Helper()
	key := fmt.Sprintf("redlock-test:%s:%d", t.Name(), keySeq.Add(1))
	t.Cleanup(func() {
		for _, c := range admin {
			_ = c.Del(context.Background(), key, redlock.QueueKey(key)).Err()
		}
	})
	return key
}

// clientsFor returns one go-redis client per address, made from
// rig.ClientOptions adjusted by opts, closed when the test ends.
func clientsFor(t testing.TB, addrs []string, opts ...func(*redis.Options)) []redlock.Client {
	t.Helper()
	cs := make([]redlock.Client, len(addrs))
	for i, a := range addrs {
		o := rig.ClientOptions(a)
		for _, f := range opts {
			f(o)
		}
		c := redis.NewClient(o)
		t.Cleanup(func() { _ = c.Close() })
		cs[i] = c
	}
	return cs
}

// addrsOf returns the nodes' addresses.
func addrsOf(nodes []*rig.Node) []string {
	a := make([]string, len(nodes))
	for i, n := range nodes {
		a[i] = n.Addr()
	}
	return a
}

// holders returns, for each admin client, the value stored at key ("" when
// the key is missing).
func holders(t testing.TB, cs []*redis.Client, key string) []string {
	t.Helper()
	vals := make([]string, len(cs))
	for i, c := range cs {
		v, err := c.Get(context.Background(), key).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatalf("node %d GET %q: %v", i, key, err)
		}
		vals[i] = v
	}
	return vals
}

// nodeErrors returns every *redlock.NodeError inside err, walking joined
// and wrapped errors.
func nodeErrors(err error) []*redlock.NodeError {
	var out []*redlock.NodeError
	var walk func(error)
	walk = func(e error) {
		switch u := e.(type) {
		case *redlock.NodeError:
			out = append(out, u)
		case interface{ Unwrap() []error }:
			for _, c := range u.Unwrap() {
				walk(c)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	walk(err)
	return out
}

// eventually polls cond every millisecond until it holds, and fails the
// test after 10s with what and cond's last detail.
func eventually(t testing.TB, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ok, detail := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still not so after 10s (%s)", what, detail)
		}
		time.Sleep(time.Millisecond)
	}
}

// firstFrozen starts five servers for one test, connects one client to
// each (the freeze must hit open connections) and freezes node 0 until
// the test resumes it or ends. It returns the nodes and the clients, as
// redlock.Clients and as *redis.Clients.
func firstFrozen(t *testing.T) ([]*rig.Node, []redlock.Client, []*redis.Client) {
	t.Helper()
	nodes := startNodes(t, 5)
	cs := clientsFor(t, addrsOf(nodes))
	adm := make([]*redis.Client, len(cs))
	for i, c := range cs {
		adm[i] = c.(*redis.Client)
		if err := adm[i].Ping(t.Context()).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := nodes[0].Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nodes[0].Resume() }) // SIGCONT: harmless if already resumed
	return nodes, cs, adm
}
