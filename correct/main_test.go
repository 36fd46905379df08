package correct_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/correct"
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
	key := fmt.Sprintf("correct-test:%d", keySeq.Add(1))
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
var testContext = locktest.Context

// checkHolds fails the test unless key holds m's token; whose names m in
// the message ("the holder's").
func checkHolds(t *testing.T, ctx context.Context, c redis.Cmdable, key string, m *correct.Mutex, whose string) {
	t.Helper()
	if got, want := c.Get(ctx, key).Val(), m.Token(); got != want {
		t.Errorf("GET %s = %q; want %s token %q", key, got, whose, want)
	}
}

// waitGone waits until key no longer exists, failing the test after 10s.
func waitGone(t *testing.T, c redis.UniversalClient, key string) {
	t.Helper()
	locktest.WaitGone(t, c, key, 10*time.Second)
}
