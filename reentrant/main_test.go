package reentrant_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/locktest"
	"github.com/locklab/locklab/internal/rig"
	"github.com/locklab/locklab/reentrant"
)

// rdb is a client of the server shared by the tests and Examples.
var rdb *redis.Client

func TestMain(m *testing.M) {
	rig.Main(m, 1, func(nodes []*rig.Node) { rdb = nodes[0].Client() })
}

// newKey returns a key unique to this test and deletes it at the end.
func newKey(t *testing.T) string { return locktest.Key(t, rdb, "reentrant-test") }

// ownerCtx returns the test's context carrying a fresh Owner.
func ownerCtx(t *testing.T) context.Context {
	return reentrant.WithOwner(t.Context(), reentrant.NewOwner())
}

// waitKeyGone waits until key no longer exists, failing t after d.
func waitKeyGone(t *testing.T, key string, d time.Duration) {
	t.Helper()
	locktest.WaitGone(t, rdb, key, d)
}
