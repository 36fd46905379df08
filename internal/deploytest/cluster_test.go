package deploytest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/rig"
	"github.com/locklab/locklab/redlock"
)

// clusterKeys are the lock keys each package runs on in the cluster: plain
// keys spread over the slots (and so over the primaries), a key with a hash
// tag, whose derived keys keep the tag, a key with an unclosed brace, which
// has no tag, so fencing's counter "{lock:...{x}:fence" must hash by the
// whole lock key to share its slot, and keys with a "}" but no tag
// ("orders}7") or an empty one ("{}"), which cannot become a tag at all
// (internal/keyslot finds them a tag in their slot). With the last two,
// correct's Lock used to work and every Unlock fail with CROSSSLOT.
func clusterKeys(name string) []string {
	keys := make([]string, 0, 10)
	for i := range 6 {
		keys = append(keys, fmt.Sprintf("lock:cl:%s:%d", name, i))
	}
	return append(keys, "lock:{cl-"+name+"}:tagged", "lock:cl:"+name+":open{brace",
		"lock:cl:"+name+":orders}7", "lock:cl:"+name+":empty{}tag")
}

// TestClusterSingleKeyLocks runs every single-key lock package on a
// 3-primary Redis Cluster through *redis.ClusterClient: lock, refusal of a
// second client, extend, unlock, and mutual exclusion between two clients,
// on keys that land on every primary. A script over keys in two slots
// fails with CROSSSLOT in cluster mode, so this is also the check that
// fencing's counter and correct's wait queue share their lock's slot.
// correct runs with its default polling: its Notifier (hand-off through
// Pub/Sub) is documented not to work on a cluster.
func TestClusterSingleKeyLocks(t *testing.T) {
	c := rig.StartCluster(t, 3)
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	a, b := c.Client(), c.Client()

	// Which primary serves each slot, to check the keys really spread.
	slots, err := a.ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatalf("CLUSTER SLOTS = %v", err)
	}
	primaryOf := func(key string) string {
		slot, err := a.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			t.Fatalf("CLUSTER KEYSLOT %s = %v", key, err)
		}
		for _, r := range slots {
			if int64(r.Start) <= slot && slot <= int64(r.End) {
				return r.Nodes[0].Addr
			}
		}
		t.Fatalf("slot %d of %s is served by nobody", slot, key)
		return ""
	}

	for _, k := range kinds {
		if !k.cluster {
			continue // redlock: see the last subtest
		}
		t.Run(k.name, func(t *testing.T) {
			used := map[string]bool{}
			for i, key := range clusterKeys(k.name) {
				used[primaryOf(key)] = true
				full := i == 0 // contention and renewal on one key are enough
				if err := exercise(ctx, k, []redis.UniversalClient{a}, []redis.UniversalClient{b}, a, key, full); err != nil {
					t.Error(err)
				}
			}
			if len(used) != 3 {
				t.Errorf("keys %q landed on %d primaries; want all 3", clusterKeys(k.name), len(used))
			}
		})
	}

	// The check above is not blind: the server refuses a script over two
	// slots.
	err = a.Eval(ctx, "return 1", []string{"lock:cl:x", "{lock:cl:y}:q"}).Err()
	if err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Errorf("EVAL over two slots = %v; want CROSSSLOT", err)
	}

	// Redlock is not for a cluster: it writes the key to N independent
	// masters, but a cluster serves each key from one primary and the
	// others answer MOVED, so no quorum forms. Given the primaries as its
	// nodes, it fails and says why.
	t.Run("redlock", func(t *testing.T) {
		var nodes []redlock.Client
		for _, n := range c.Nodes() {
			nodes = append(nodes, n.Client())
		}
		m := redlock.New(nodes, "lock:cl:redlock", redlock.WithTries(1))
		err := m.Lock(ctx)
		if !errors.Is(err, redlock.ErrQuorumUnreachable) || !strings.Contains(err.Error(), "MOVED") {
			t.Errorf("redlock over the cluster's primaries: Lock = %v; want ErrQuorumUnreachable naming MOVED", err)
		}
	})
}
