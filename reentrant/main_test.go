package reentrant_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/rig"
	"github.com/locklab/locklab/reentrant"
)

// rdb is a client of the server shared by the tests and Examples.
var rdb *redis.Client

func TestMain(m *testing.M) {
	rig.Main(m, 1, func(nodes []*rig.Node) { rdb = nodes[0].Client() })
}

var keySeq atomic.Int64

// newKey returns a key unique to this test and deletes it at the end.
func newKey(t *testing.T) string {
	t.Helper()
	key := fmt.Sprintf("reentrant-test:%s:%d", t.Name(), keySeq.Add(1))
	t.Cleanup(func() { rdb.Del(context.Background(), key) })
	return key
}

// ownerCtx returns the test's context carrying a fresh Owner.
func ownerCtx(t *testing.T) context.Context {
	return reentrant.WithOwner(t.Context(), reentrant.NewOwner())
}

// waitKeyGone waits until key no longer exists, failing t after d.
func waitKeyGone(t *testing.T, key string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		n, err := rdb.Exists(context.Background(), key).Result()
		if err == nil && n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("key %q still there after %v (EXISTS = %d, %v)", key, d, n, err)
		}
		time.Sleep(2 * time.Millisecond) // poll interval, not a wait for an event
	}
}
