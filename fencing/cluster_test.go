package fencing_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/fencing"
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
		if got := admin.ClusterKeySlot(ctx, counter).Val(); got != want || int64(slot(key)) != want {
			t.Errorf("CLUSTER KEYSLOT %q = %d, %q = %d, slot(%q) = %d; want all equal",
				key, want, counter, got, key, slot(key))
		}
	}

	// Without the hash-tag scheme the same script fails: the check above
	// would be blind if the server did not enforce slots.
	err := cc.Eval(ctx, "return 1", []string{"orders", "orders:fence"}).Err()
	if err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Errorf("EVAL on keys in two slots = %v; want a CROSSSLOT error", err)
	}
}

// slot is Redis Cluster's key slot: CRC16 (XMODEM) of the hash tag, or of
// the whole key when it has none, modulo 16384.
func slot(key string) uint16 {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			key = key[open+1 : open+1+end]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc % 16384
}

func TestSlot(t *testing.T) {
	// Reference values: the CRC16 check value of the Redis Cluster
	// specification, and the examples of the CLUSTER KEYSLOT page.
	for key, want := range map[string]uint16{"123456789": 0x31C3, "somekey": 11058, "foo{hash_tag}": 2515} {
		if got := slot(key); got != want {
			t.Errorf("slot(%q) = %d; want %d", key, got, want)
		}
	}
}
