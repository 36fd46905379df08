//go:build compose

package composetest_test

// These tests run against the Compose stacks for real, with the build tag
// "compose", once the stack they test is up (CI's Docker stage, docker/ci.sh):
//
//	make up STACK=redlock  && go test -tags compose -run Redlock ./internal/composetest/
//	make up STACK=sentinel && go test -tags compose -run Sentinel ./internal/composetest/
//
// A stack that is not up fails its test, naming the command that starts
// it: with the tag given, a skip would be a green that proves nothing.
// The Sentinel test pauses the primary (docker pause), so the stack is
// left failed over: make down after it.

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/correct"
	"github.com/locklab/locklab/redlock"
)

func dial(t *testing.T, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, ReadTimeout: 2 * time.Second, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func stackUp(t *testing.T, stack string, addrs []string) {
	t.Helper()
	for _, a := range addrs {
		if err := dial(t, a).Ping(t.Context()).Err(); err != nil {
			t.Fatalf("%s does not answer (%v): start the stack with make up STACK=%s", a, err, stack)
		}
	}
}

func TestRedlockStackServesRedlock(t *testing.T) {
	addrs := redlockAddrs(t)
	stackUp(t, "redlock", addrs)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	clients := make([]redlock.Client, len(addrs))
	for i, a := range addrs {
		c := dial(t, a)
		clients[i] = c
		info, err := c.Info(ctx, "replication").Result()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(info, "role:master") || !strings.Contains(info, "connected_slaves:0") {
			t.Errorf("%s INFO replication:\n%s\nwant an independent primary (role:master, no replicas)", a, info)
		}
	}
	key := "composetest:redlock"
	a := redlock.New(clients, key, redlock.WithTTL(10*time.Second))
	b := redlock.New(clients, key, redlock.WithTTL(10*time.Second))
	if err := a.Lock(ctx); err != nil {
		t.Fatalf("A Lock() over the 5 nodes = %v", err)
	}
	// Lock returns once a majority holds it; the SET to the slowest node
	// may still be on the way, and B's SET could beat it there.
	if err := a.Settle(ctx); err != nil {
		t.Fatalf("A Settle() = %v", err)
	}
	if ok, err := b.TryLock(ctx); ok || err != nil {
		t.Errorf("B TryLock() while A holds = %v, %v; want false, nil", ok, err)
	}
	held := 0
	for _, c := range clients {
		if n, _ := c.(*redis.Client).Exists(ctx, key).Result(); n == 1 {
			held++
		}
	}
	if held != len(clients) {
		t.Errorf("A's key is on %d of %d nodes; want all", held, len(clients))
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatalf("A Unlock() = %v", err)
	}
	if ok, err := b.TryLock(ctx); !ok || err != nil {
		t.Errorf("B TryLock() after A's Unlock = %v, %v; want true, nil", ok, err)
	}
	if err := b.Unlock(ctx); err != nil {
		t.Errorf("B Unlock() = %v", err)
	}
}

// sentinelAddrs and the primary/replica of sentinel.yaml, as
// compose/README.md documents them (TestSentinelComposeMonitorsItsPrimary
// checks the file against them).
var (
	sentinelAddrs = []string{"127.0.0.1:7211", "127.0.0.1:7212", "127.0.0.1:7213"}
	primaryAddr   = "127.0.0.1:7201"
	replicaAddr   = "127.0.0.1:7202"
)

// masterOf asks one sentinel where the master "locklab" is.
func masterOf(ctx context.Context, t *testing.T, sentinel string) string {
	t.Helper()
	s := redis.NewSentinelClient(&redis.Options{Addr: sentinel, DialTimeout: time.Second, ReadTimeout: time.Second})
	defer s.Close()
	hp, err := s.GetMasterAddrByName(ctx, "locklab").Result()
	if err != nil || len(hp) != 2 {
		return ""
	}
	return hp[0] + ":" + hp[1]
}

// composeDo runs docker/compose.sh on the sentinel stack's service, as
// compose/README.md tells a user to (pause, unpause).
func composeDo(t *testing.T, verb, service string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(root, "docker", "compose.sh"), verb, "sentinel", service)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("docker/compose.sh %s sentinel %s: %v: %s", verb, service, err, out)
	}
}

func eventually(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not within the time allowed (%v)", what, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestSentinelStackFailsOver does what compose/README.md tells a user to
// try: a lock through a Sentinel-backed client, the primary paused, the
// sentinels promoting the replica, the same client locking on the new
// primary, and the old primary, unpaused, following it.
func TestSentinelStackFailsOver(t *testing.T) {
	stackUp(t, "sentinel", append([]string{primaryAddr, replicaAddr}, sentinelAddrs...))
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second) // the failover and the lock on the new primary: about 3s
	defer cancel()
	for _, s := range sentinelAddrs {
		if got := masterOf(ctx, t, s); got != primaryAddr {
			t.Fatalf("sentinel %s says the master is %q; want %s (a fresh stack: make down, make up STACK=sentinel)", s, got, primaryAddr)
		}
	}
	client := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:    "locklab",
		SentinelAddrs: sentinelAddrs,
		DialTimeout:   time.Second,
		ReadTimeout:   time.Second,
		WriteTimeout:  time.Second,
	})
	defer client.Close()
	m := correct.New(client, "composetest:sentinel", correct.WithTTL(10*time.Second))
	if err := m.Lock(ctx); err != nil {
		t.Fatalf("Lock() through Sentinel = %v", err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatalf("Unlock() = %v", err)
	}

	composeDo(t, "pause", "primary")
	paused := time.Now()
	unpaused := false
	defer func() {
		if !unpaused {
			composeDo(t, "unpause", "primary")
		}
	}()
	eventually(ctx, t, "a quorum of sentinels names the replica as master", func() bool {
		n := 0
		for _, s := range sentinelAddrs {
			if masterOf(ctx, t, s) == replicaAddr {
				n++
			}
		}
		return n >= 2
	})
	t.Logf("failover: the sentinels named %s master %v after the pause", replicaAddr, time.Since(paused).Round(100*time.Millisecond))

	// The same client finds the new primary through the sentinels.
	eventually(ctx, t, "TryLock() through Sentinel on the new primary", func() bool {
		lctx, lcancel := context.WithTimeout(ctx, 3*time.Second)
		defer lcancel()
		ok, err := m.TryLock(lctx)
		if err == nil && !ok {
			t.Fatal("TryLock() on the new primary = false; no one else holds composetest:sentinel")
		}
		return ok // an error: the client is still finding the new primary
	})
	t.Logf("failover: locked on the new primary %v after the pause", time.Since(paused).Round(100*time.Millisecond))
	if err := m.Unlock(ctx); err != nil {
		t.Errorf("Unlock() on the new primary = %v", err)
	}

	// The old primary follows only when a sentinel tells it to: once it
	// has reported itself a master for 8s (Sentinel's 4 publish periods),
	// seen by an INFO that Sentinel sends a replica every 10s; then it
	// syncs. About 15s here; it gets a minute of its own, and a failure
	// says what the old primary and the sentinels saw.
	composeDo(t, "unpause", "primary")
	unpaused = true
	back := time.Now()
	fctx, fcancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer fcancel()
	old := dial(t, primaryAddr)
	var info string
	defer func() {
		if t.Failed() {
			t.Logf("the old primary's INFO replication:\n%s", info)
			s := redis.NewSentinelClient(&redis.Options{Addr: sentinelAddrs[0], DialTimeout: time.Second, ReadTimeout: time.Second})
			defer s.Close()
			reps, err := s.Replicas(t.Context(), "locklab").Result()
			t.Logf("sentinel %s: master %s; replicas %v (%v)", sentinelAddrs[0], masterOf(t.Context(), t, sentinelAddrs[0]), reps, err)
		}
	}()
	eventually(fctx, t, "the old primary, unpaused, follows the new one", func() bool {
		var err error
		info, err = old.Info(fctx, "replication").Result()
		return err == nil && strings.Contains(info, "role:slave") && strings.Contains(info, "master_port:7202") &&
			strings.Contains(info, "master_link_status:up")
	})
	t.Logf("failover: the old primary followed the new one %v after the unpause", time.Since(back).Round(100*time.Millisecond))
}
