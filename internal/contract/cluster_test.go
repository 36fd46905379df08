package contract_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/correct"
	"github.com/locklab/locklab/fencing"
	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/internal/keyslot"
	"github.com/locklab/locklab/internal/rig"
	"github.com/locklab/locklab/redlock"
	"github.com/locklab/locklab/reentrant"
	"github.com/locklab/locklab/watchdog"
)

// The contract on Redis Cluster: the Redis locks that take one client, on
// a *redis.ClusterClient and on its AutoPipeliner (ClusterClient.
// AutoPipeline(), "<name>@autopipe"), against a real cluster of three
// primaries with a replica each (rig.StartCluster). One cluster serves
// every scenario of TestCluster; keys keep them apart, and land on every
// primary.
//
// Faults: the parties' ClusterClients reach each primary through a fault
// proxy of its own. The client learns the slot map from ClusterSlots
// (the real map with the proxies' addresses in place of the primaries'),
// not from CLUSTER SLOTS, so it never talks to a primary but through its
// proxy, and no command of the client's own bookkeeping is counted by the
// sweep.

// clusterKind is one lock kind on a cluster client.
type clusterKind struct {
	name string
	// errNotObtained is the package's sentinel.
	errNotObtained error
	// persistent are suffixes of keys kept on purpose with no TTL.
	persistent []string
	reentrant  bool
	// make makes one party's lock on key through c (a ClusterClient or
	// its AutoPipeliner); nodes are redlock's other nodes.
	make func(t *testing.T, c lockClient, nodes []lockClient, key string, ttl time.Duration) locker
	// pipelined: the party's locks use its ClusterClient's AutoPipeliner.
	pipelined bool
}

var clusterKinds = func() []clusterKind {
	plain := []clusterKind{
		{
			name: "correct", errNotObtained: correct.ErrNotObtained,
			make: func(_ *testing.T, c lockClient, _ []lockClient, key string, ttl time.Duration) locker {
				return correct.New(c, key, correct.WithTTL(ttl), correct.WithRetry(fastRetry))
			},
		},
		{
			name: "watchdog", errNotObtained: watchdog.ErrNotObtained,
			make: func(_ *testing.T, c lockClient, _ []lockClient, key string, ttl time.Duration) locker {
				return watchdog.New(c, key, watchdog.WithTTL(ttl), watchdog.WithRetry(fastRetry))
			},
		},
		{
			name: "reentrant", errNotObtained: reentrant.ErrNotObtained, reentrant: true,
			make: func(_ *testing.T, c lockClient, _ []lockClient, key string, ttl time.Duration) locker {
				return asOwner(reentrant.New(c, key, reentrant.WithTTL(ttl), reentrant.WithRetry(fastRetry)))
			},
		},
		{
			name: "fencing", errNotObtained: fencing.ErrNotObtained, persistent: []string{":fence"},
			make: func(_ *testing.T, c lockClient, _ []lockClient, key string, ttl time.Duration) locker {
				return fencing.New(c, key, fencing.WithTTL(ttl), fencing.WithRetry(fastRetry))
			},
		},
		{
			// Redlock over three independent nodes, one of them a whole
			// cluster reached through a ClusterClient (the other two the
			// package's shared standalone servers): each node of Redlock
			// may be a cluster, never the primaries of one cluster
			// (internal/deploytest shows those refused by MOVED).
			name: "redlock", errNotObtained: redlock.ErrNotObtained,
			make: func(_ *testing.T, c lockClient, nodes []lockClient, key string, ttl time.Duration) locker {
				cs := []redlock.Client{c}
				for _, n := range nodes {
					cs = append(cs, n)
				}
				return redlock.New(cs, key, redlock.WithTTL(ttl), redlock.WithRetry(fastRetry))
			},
		},
	}
	out := plain
	for _, k := range plain {
		k.name += autopipeSuffix
		k.pipelined = true
		out = append(out, k)
	}
	return out
}()

// keeps reports whether key is one the kind keeps on purpose.
func (k clusterKind) keeps(key string) bool {
	for _, s := range k.persistent {
		if strings.HasSuffix(key, s) {
			return true
		}
	}
	return false
}

// asKind is k as the shared helpers (sweep, checkFree) name it.
func (k clusterKind) asKind() kind { return kind{name: k.name + "@cluster", nodes: 1} }

// onCluster is the cluster every scenario of TestCluster shares.
type onCluster struct {
	c     *rig.Cluster
	admin *redis.ClusterClient
	slots []redis.ClusterSlot // the primaries' slot ranges, real addresses
	moved map[string]bool     // primaries (as in slots) whose shard failed over
}

// clusterOptions are a party's ClusterClient options of flavour f: go-redis's
// defaults (user: a command whose reply is lost is sent again), or the rig's
// (strict: no retries, deadlines honoured).
func (oc *onCluster) clusterOptions(f flavour, addrs []string) *redis.ClusterOptions {
	if f == strict {
		o := rig.ClientOptions(addrs[0])
		return &redis.ClusterOptions{
			Addrs: addrs, DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout,
			MaxRetries: -1, ContextTimeoutEnabled: true, DisableIdentity: true, DialerRetries: 1,
		}
	}
	return &redis.ClusterOptions{Addrs: addrs}
}

// client returns a party's client for kind k: a new ClusterClient of
// flavour f (through proxies, one per primary in slot-map order, when
// given), or its AutoPipeliner for a pipelined kind. Both are closed when
// the test ends.
func (oc *onCluster) client(t *testing.T, k clusterKind, f flavour, proxies map[string]*faultproxy.Proxy) lockClient {
	t.Helper()
	var addrs []string
	for _, s := range oc.slots {
		addrs = append(addrs, s.Nodes[0].Addr)
	}
	o := oc.clusterOptions(f, addrs)
	if proxies != nil {
		slots := make([]redis.ClusterSlot, len(oc.slots))
		for i, s := range oc.slots {
			slots[i] = redis.ClusterSlot{Start: s.Start, End: s.End, Nodes: []redis.ClusterNode{{Addr: proxies[s.Nodes[0].Addr].Addr()}}}
		}
		o.Addrs = nil
		for _, s := range slots {
			o.Addrs = append(o.Addrs, s.Nodes[0].Addr)
		}
		o.ClusterSlots = func(context.Context) ([]redis.ClusterSlot, error) { return slots, nil }
	}
	cc := redis.NewClusterClient(o)
	t.Cleanup(func() { _ = cc.Close() })
	if !k.pipelined {
		return cc
	}
	ap, err := cc.AutoPipeline()
	if err != nil {
		t.Fatalf("ClusterClient.AutoPipeline() = %v", err)
	}
	t.Cleanup(func() { _ = ap.Close() }) // before cc's Close
	return ap
}

// proxies starts one fault proxy per primary, keyed by its address.
func (oc *onCluster) proxies(t *testing.T) map[string]*faultproxy.Proxy {
	t.Helper()
	ps := map[string]*faultproxy.Proxy{}
	for _, s := range oc.slots {
		a := s.Nodes[0].Addr
		if ps[a] == nil {
			ps[a] = faultproxy.Start(t, a)
		}
	}
	return ps
}

// primaryOf returns the address of the primary serving key's slot.
func (oc *onCluster) primaryOf(t *testing.T, key string) string {
	t.Helper()
	slot := keyslot.Slot(key)
	for _, s := range oc.slots {
		if s.Start <= slot && slot <= s.End {
			return s.Nodes[0].Addr
		}
	}
	t.Fatalf("slot %d of %s is served by nobody", slot, key)
	return ""
}

// party makes a party of kind k on key, through proxies when given; redlock
// gets the shared standalone servers 1 and 2 as its other nodes (clients of
// flavour f, not proxied).
func (oc *onCluster) party(t *testing.T, k clusterKind, name, key string, f flavour, proxies map[string]*faultproxy.Proxy) *party {
	t.Helper()
	c := oc.client(t, k, f, proxies)
	var nodes []lockClient
	if strings.HasPrefix(k.name, "redlock") {
		for _, n := range servers[1:3] {
			o := rig.UserOptions(n.Addr())
			if f == strict {
				o = rig.ClientOptions(n.Addr())
			}
			nc := redis.NewClient(o)
			t.Cleanup(func() { _ = nc.Close() })
			nodes = append(nodes, nc)
		}
	}
	return &party{name: name, queued: make(chan struct{}), lock: k.make(t, c, nodes, key, longTTL)}
}

// key returns a fresh key for kind k, and checks in Cleanup that the test
// left nothing behind in the cluster (and, for redlock, on its standalone
// nodes): the lock key gone, every key kept beside it with a TTL.
func (oc *onCluster) key(t *testing.T, k clusterKind) string {
	t.Helper()
	key := fmt.Sprintf("contract:cluster:%s:%d", k.name, keySeq.Add(1))
	t.Cleanup(func() {
		if t.Failed() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var mu sync.Mutex
		check := func(where string, c redis.Cmdable) {
			for _, pattern := range []string{key + "*", keyslot.Base(key) + "*"} {
				iter := c.Scan(ctx, 0, pattern, 100).Iterator()
				for iter.Next(ctx) {
					left := iter.Val()
					mu.Lock()
					if left == key {
						t.Errorf("%s: the lock key %s is left on %s after every party unlocked", k.name, key, where)
					} else if ttl := c.PTTL(ctx, left).Val(); ttl == -1 && !k.keeps(left) {
						t.Errorf("%s: key %s left on %s with no TTL", k.name, left, where)
					}
					mu.Unlock()
				}
				if err := iter.Err(); err != nil {
					t.Errorf("SCAN %s on %s: %v", pattern, where, err)
				}
			}
		}
		err := oc.admin.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			check(c.Options().Addr, c)
			return nil
		})
		if err != nil {
			t.Errorf("SCAN every primary: %v", err)
		}
		if strings.HasPrefix(k.name, "redlock") {
			for _, n := range servers[1:3] {
				c := redis.NewClient(rig.ClientOptions(n.Addr()))
				check(n.Addr(), c)
				_ = c.Close()
			}
		}
	})
	return key
}

// TestCluster runs the contract's scenarios on one Redis Cluster of three
// primaries, a replica each, for every clusterKind.
func TestCluster(t *testing.T) {
	t.Parallel() // the cluster's start (2s and more) overlaps other tests
	c := rig.StartCluster(t, 3, rig.WithReplicas(1))
	admin := c.Client()
	ctx := t.Context()
	var slots []redis.ClusterSlot
	all, err := admin.ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatalf("CLUSTER SLOTS = %v", err)
	}
	for _, s := range all {
		slots = append(slots, redis.ClusterSlot{Start: s.Start, End: s.End, Nodes: s.Nodes[:1]})
	}
	oc := &onCluster{c: c, admin: admin, slots: slots, moved: map[string]bool{}}

	t.Run("EachReplyLostDefaultOptions", func(t *testing.T) {
		oc.forKinds(t, func(t *testing.T, k clusterKind) {
			sweep(t, k.asKind(), func(t *testing.T, step int) *faultproxy.Rule { return oc.sequence(t, k, step, user) })
		})
	})
	t.Run("EachReplyLostNoRetries", func(t *testing.T) {
		oc.forKinds(t, func(t *testing.T, k clusterKind) {
			sweep(t, k.asKind(), func(t *testing.T, step int) *faultproxy.Rule { return oc.sequence(t, k, step, strict) })
		})
	})
	t.Run("ExclusiveOverEveryPrimary", func(t *testing.T) { oc.forKinds(t, oc.exclusive) })
	t.Run("EvictingPrimaryRefused", func(t *testing.T) { oc.forKinds(t, oc.evicting) })
	t.Run("UnorderedAutoPipelinerRefused", func(t *testing.T) {
		oc.forKindsIf(t, func(k clusterKind) bool { return k.pipelined && !strings.HasPrefix(k.name, "redlock") }, oc.unordered)
	})
	t.Run("NotifierRefusedOrExclusive", func(t *testing.T) { notifierOnCluster(t, oc) })
	t.Run("LockReturnsByItsDeadline", func(t *testing.T) {
		oc.forKindsIf(t, func(k clusterKind) bool { return k.pipelined }, func(t *testing.T, k clusterKind) {
			t.Parallel() // each waits out a 2s bound; proxies and keys their own
			oc.deadline(t, k)
		})
	})
	// Last: it moves primaries, and the proxied clients' slot map is the
	// one read at the start. Two kinds, one failover each (about 1s).
	t.Run("LockSurvivesAFailover", func(t *testing.T) {
		oc.forKindsIf(t, func(k clusterKind) bool { return k.name == "correct" || k.name == "fencing" }, oc.failover)
	})
}

// forKinds runs scenario as a subtest for each clusterKind.
func (oc *onCluster) forKinds(t *testing.T, scenario func(t *testing.T, k clusterKind)) {
	oc.forKindsIf(t, func(clusterKind) bool { return true }, scenario)
}

// forKindsIf runs scenario as a subtest for each clusterKind which admits.
func (oc *onCluster) forKindsIf(t *testing.T, which func(clusterKind) bool, scenario func(t *testing.T, k clusterKind)) {
	for _, k := range clusterKinds {
		if which(k) {
			t.Run(k.name, func(t *testing.T) { scenario(t, k) })
		}
	}
}
