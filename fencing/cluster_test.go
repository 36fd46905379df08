package fencing_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/fencing"
	"github.com/locklab/locklab/internal/keyslot"
	"github.com/locklab/locklab/internal/rig"
)

// TestCluster runs the lock on a one-node Redis Cluster through a
// *redis.ClusterClient. In cluster mode the server refuses a script whose
// keys are in different slots (CROSSSLOT), so this checks the counter-key
// scheme for real. A new cluster node waits 2s after boot before it serves
// writes; the test runs in parallel with the others to hide that.
func TestCluster(t *testing.T) {
	rig.RequireControl(t)
	// Start the node before pausing for the parallel phase: its 2s count
	// starts at boot and runs while the serial tests do.
	node := rig.Start(t, rig.WithArgs("--cluster-enabled", "yes"))
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	admin := node.Client()
	if err := admin.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err(); err != nil {
		t.Fatalf("CLUSTER ADDSLOTSRANGE: %v", err)
	}
	for {
		info, err := admin.ClusterInfo(ctx).Result()
		if err == nil && strings.Contains(info, "cluster_state:ok") {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("cluster_state not ok after 20s: %v %q", err, info)
		case <-time.After(10 * time.Millisecond):
		}
	}

	opts := rig.ClientOptions(node.Addr())
	cc := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:        []string{node.Addr()},
		DialTimeout:  opts.DialTimeout,
		ReadTimeout:  opts.ReadTimeout,
		WriteTimeout: opts.WriteTimeout,
		MaxRetries:   -1,
	})
	t.Cleanup(func() { _ = cc.Close() })

	for _, key := range []string{"orders", "{orders}:lock", "a{b", "x{y}z{w}"} {
		m := fencing.New(cc, key)
		if err := m.Lock(ctx); err != nil {
			t.Errorf("Lock(%q) on a cluster = %v", key, err)
			continue
		}
		if got := m.Token(); got != 1 {
			t.Errorf("Lock(%q) token = %d; want 1", key, got)
		}
		if err := m.Unlock(ctx); err != nil {
			t.Errorf("Unlock(%q) on a cluster = %v", key, err)
		}
		counter, _ := fencing.CounterKey(key)
		want := admin.ClusterKeySlot(ctx, key).Val()
		if got := admin.ClusterKeySlot(ctx, counter).Val(); got != want || int64(keyslot.Slot(key)) != want {
			t.Errorf("CLUSTER KEYSLOT %q = %d, %q = %d, slot(%q) = %d; want all equal",
				key, want, counter, got, key, keyslot.Slot(key))
		}
	}

	// Without the hash-tag scheme the same script fails: the check above
	// would be blind if the server did not enforce slots.
	err := cc.Eval(ctx, "return 1", []string{"orders", "orders:fence"}).Err()
	if err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Errorf("EVAL on keys in two slots = %v; want a CROSSSLOT error", err)
	}
}
