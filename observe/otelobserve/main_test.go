package otelobserve_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/locktest"
	"github.com/locklab/locklab/internal/rig"
)

// redisAddr is the address of the redis-server that TestMain starts for
// the tests and Examples of this package.
var redisAddr string

func TestMain(m *testing.M) {
	rig.Main(m, 1, func(nodes []*rig.Node) { redisAddr = nodes[0].Addr() })
}

// keySeq makes every test's keys unique.
var keySeq atomic.Int64

// newKey returns a key that no other test uses. In Cleanup it fails the
// test if any key starting with it is left on the shared server.
func newKey(t *testing.T) string {
	t.Helper()
	key := fmt.Sprintf("otelobserve-test:%d", keySeq.Add(1))
	t.Cleanup(func() {
		c := redis.NewClient(rig.ClientOptions(redisAddr))
		defer c.Close()
		if left := locktest.ScanKeys(t, c, key+"*"); len(left) > 0 {
			t.Errorf("keys left behind: %q", left)
		}
	})
	return key
}

// newClient returns a client of the shared server, closed in Cleanup.
func newClient(t *testing.T) *redis.Client {
	return locktest.Client(t, redisAddr)
}

// testContext returns a context that ends with the test, or after a
// generous cap so that a hung Lock fails the test instead of the run.
func testContext(t *testing.T) context.Context { return locktest.Context(t) }

// newExampleClient returns a client of the shared server, for Examples,
// which have no t to close it: the Example closes it.
func newExampleClient() *redis.Client {
	return redis.NewClient(rig.ClientOptions(redisAddr))
}
