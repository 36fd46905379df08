package correct_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/correct"
	"github.com/locklab/locklab/internal/leakcheck"
	"github.com/locklab/locklab/internal/locktest"
	"github.com/locklab/locklab/internal/rig"
)

// Every kind of go-redis client satisfies Client. redis.NewFailoverClient
// (Sentinel) returns a *redis.Client and redis.NewFailoverClusterClient a
// *redis.ClusterClient, so they are covered too.
var (
	_ correct.Client = (*redis.Client)(nil)
	_ correct.Client = (*redis.ClusterClient)(nil)
	_ correct.Client = (*redis.Ring)(nil)
	_ correct.Client = (*redis.Conn)(nil)
	_ correct.Client = redis.UniversalClient(nil)
)

// exercise runs a short story on key through two Mutexes made with c: one
// acquires, the other is refused, then extend, TTL, unlock, and the other
// acquires and unlocks.
func exercise(t *testing.T, ctx context.Context, c correct.Client, key string) {
	t.Helper()
	a, b := correct.New(c, key), correct.New(c, key)
	mustLock(t, ctx, a)
	if ok, err := b.TryLock(ctx); ok || err != nil {
		t.Fatalf("b.TryLock while a holds = %v, %v; want false, nil", ok, err)
	}
	if err := a.Extend(ctx, time.Minute); err != nil {
		t.Fatalf("a.Extend = %v; want nil", err)
	}
	if ttl, err := a.TTL(ctx); err != nil || ttl <= 8*time.Second {
		t.Fatalf("a.TTL after Extend(1m) = %v, %v; want more than 8s", ttl, err)
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatalf("a.Unlock = %v; want nil", err)
	}
	mustLock(t, ctx, b)
	if err := b.Unlock(ctx); err != nil {
		t.Fatalf("b.Unlock = %v; want nil", err)
	}
}

// TestRing locks keys through a *redis.Ring over two servers, until both
// shards have held a lock, and checks each key lived on exactly one shard.
func TestRing(t *testing.T) {
	leakcheck.Guard(t)
	nodes := rig.StartN(t, 2)
	ctx := testContext(t)
	ring := redis.NewRing(&redis.RingOptions{
		Addrs:      map[string]string{"s0": nodes[0].Addr(), "s1": nodes[1].Addr()},
		MaxRetries: -1,
	})
	defer ring.Close()

	used := map[int]bool{}
	for i := 0; len(used) < 2; i++ {
		if i == 100 {
			t.Fatalf("100 keys all landed on shards %v", used)
		}
		key := fmt.Sprintf("correct-test:ring:%d", i)
		a := correct.New(ring, key)
		mustLock(t, ctx, a)
		shard := -1
		for j, n := range nodes {
			if n.Client().Get(ctx, key).Val() == a.Token() {
				if shard >= 0 {
					t.Fatalf("key %s is on both shards", key)
				}
				shard = j
			}
		}
		if shard < 0 {
			t.Fatalf("key %s is on no shard", key)
		}
		used[shard] = true
		if err := a.Unlock(ctx); err != nil {
			t.Fatalf("Unlock = %v; want nil", err)
		}
		exercise(t, ctx, ring, key)
	}
	for _, n := range nodes {
		if left := locktest.ScanKeys(t, n.Client(), "correct-test:*"); len(left) > 0 {
			t.Errorf("keys left on %s: %q", n.Addr(), left)
		}
	}
}

// clusterTested makes TestCluster run once per test binary.
var clusterTested atomic.Bool

// TestCluster locks through a *redis.ClusterClient on a one-node cluster
// that owns all 16384 slots.
//
// A new cluster node reports cluster_state:ok only 2s after it starts
// (Redis's CLUSTER_WRITABLE_DELAY), so under -count=N the test runs once:
// the later runs would repeat the same wait and check nothing new.
func TestCluster(t *testing.T) {
	if clusterTested.Swap(true) {
		t.Skip("ran once in this test binary; a new cluster node needs 2s to come up")
	}
	rig.RequireControl(t) // cluster mode is a server argument
	leakcheck.Guard(t)
	node := rig.Start(t, rig.WithArgs("--cluster-enabled", "yes"))
	ctx := testContext(t)
	admin := node.Client()
	if err := admin.ClusterAddSlotsRange(ctx, 0, 16383).Err(); err != nil {
		t.Fatalf("CLUSTER ADDSLOTSRANGE: %v", err)
	}
	for !strings.Contains(admin.ClusterInfo(ctx).Val(), "cluster_state:ok") {
		select {
		case <-ctx.Done():
			t.Fatalf("cluster_state not ok: %v", ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
	cluster := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:      []string{node.Addr()},
		MaxRetries: -1,
	})
	defer cluster.Close()

	exercise(t, ctx, cluster, "correct-test:cluster")
	if left := locktest.ScanKeys(t, admin, "correct-test:*"); len(left) > 0 {
		t.Errorf("keys left: %q", left)
	}
}
