package faults

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/locklab/locklab/bench/env"
	"github.com/locklab/locklab/bench/registry"
	"github.com/locklab/locklab/internal/preflight"
	"github.com/locklab/locklab/internal/rig"
	"github.com/redis/go-redis/v9"
)

// runFailover: schedule 4. Each event has its own Sentinel group: a
// primary, a replica whose replication link runs through a fault proxy
// (so it can be held back), and three sentinels. Single-server locks use
// the group through Sentinel; 5-node locks have it as their first node
// and the scoreboard's servers 1-4 as the other four.
func runFailover(ev *Event) error {
	ctx := ev.ctx
	nodes, err := rig.NewN(ctx, 2)
	if err != nil {
		return err
	}
	primary, replica := nodes[0], nodes[1]
	ev.onClose(func() { _ = primary.Close(); _ = replica.Close() })
	link, err := ev.proxy(primary.Addr())
	if err != nil {
		return err
	}
	if err := replica.ReplicaOf(ctx, link.Addr()); err != nil {
		return err
	}
	sentinels, err := rig.NewSentinels(ctx, primary, 3)
	if err != nil {
		return err
	}
	ev.onClose(func() { _ = sentinels.Close() })
	ev.users = &registry.UserClients{Timeout: userTimeout, Sentinel: &registry.Sentinel{Master: sentinels.MasterName(), Addrs: sentinels.Addrs()}}
	ev.lockAddrs = append([]string{primary.Addr()}, ev.setup.Srv.Addrs[1:faultLockServers]...)
	if err := ev.start(); err != nil {
		return err
	}
	// The sweep at the end covers the scoreboard's servers; these two go
	// away with their keys.
	link.Blackhole()
	ev.faultAll("replication to the replica held back (the stream is stuck in the network)")
	return ev.standard(func() error {
		old := primary.Addr()
		if err := primary.Kill(); err != nil {
			return err
		}
		killed := time.Now()
		ev.faultAll("kill -9 the primary (it dies with the lock; the replica never saw it)")
		addr, err := sentinels.WaitFailover(ctx, old)
		if err != nil {
			return fmt.Errorf("failover: %w", err)
		}
		ev.faultAll("sentinels promoted the replica (%s) %d ms after the kill", addr, time.Since(killed).Milliseconds())
		return nil
	})
}

// runEviction: schedule 7.
func runEviction(ev *Event) error {
	ctx := ev.ctx
	admins := ev.setup.Srv.Admin[:faultLockServers]
	// Headroom above what each server uses now, so the run starts without
	// evictions; the lock keys and queues are a few KB.
	const headroom = 4 << 20
	for i, c := range admins {
		used, err := usedMemory(ctx, c)
		if err != nil {
			return err
		}
		if err := configSet(ctx, c, "maxmemory", strconv.FormatInt(used+headroom, 10),
			"maxmemory-policy", "allkeys-lru", "notify-keyspace-events", "Ee"); err != nil {
			return fmt.Errorf("server %d: %w", i, err)
		}
	}
	// The locks remember a server's configuration for a while
	// (internal/preflight); each event is a deployment of its own.
	preflight.Forget()
	defer func() {
		bg, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, c := range admins {
			_ = configSet(bg, c, "maxmemory", "0", "maxmemory-policy", "noeviction", "notify-keyspace-events", "")
		}
		preflight.Forget()
	}()
	if err := ev.start(); err != nil {
		return err
	}
	return ev.standard(func() error {
		// Redis's LRU clock ticks once a second: keys written in the same
		// second as the filler would look as recent as it.
		if !env.SleepCtx(ctx, 1100*time.Millisecond) {
			return ctx.Err()
		}
		written, evicted, total, err := pressure(ctx, admins, ev.tag, 3*headroom)
		if err != nil {
			return err
		}
		ev.faultAll("memory pressure (allkeys-lru): %d MB written to each server; %d of the %d keys the locks had were evicted",
			written>>20, evicted, total)
		return nil
	})
}

// pressure writes filler keys (tag:fill:N, 64 KB each) to every server
// until every key of tag that exists now has been evicted, or limit bytes
// per server were written. Evictions are seen as keyspace notifications.
func pressure(ctx context.Context, admins []*redis.Client, tag string, limit int64) (written int64, evicted, total int, err error) {
	keys := map[string]bool{}
	for _, c := range admins {
		ks, err := scanKeys(ctx, c, "*"+tag+"*")
		if err != nil {
			return 0, 0, 0, err
		}
		for _, k := range ks {
			keys[c.Options().Addr+" "+k] = true
		}
	}
	total = len(keys)
	var mu sync.Mutex
	gone := 0
	done := make(chan struct{})
	var subs []*redis.PubSub
	for _, c := range admins {
		sub := c.Subscribe(ctx, "__keyevent@0__:evicted")
		if _, err := sub.Receive(ctx); err != nil {
			return 0, 0, total, fmt.Errorf("subscribe to evictions: %w", err)
		}
		subs = append(subs, sub)
		addr := c.Options().Addr
		go func() {
			for m := range sub.Channel() {
				mu.Lock()
				if keys[addr+" "+m.Payload] {
					delete(keys, addr+" "+m.Payload)
					gone++
					if len(keys) == 0 {
						close(done)
					}
				}
				mu.Unlock()
			}
		}()
	}
	defer func() {
		for _, s := range subs {
			_ = s.Close()
		}
	}()
	if total == 0 {
		return 0, 0, 0, nil
	}
	value := strings.Repeat("x", 64<<10)
	for n := 0; written < limit; n++ {
		select {
		case <-done:
			mu.Lock()
			defer mu.Unlock()
			return written, gone, total, nil
		case <-ctx.Done():
			return written, gone, total, ctx.Err()
		default:
		}
		var wg sync.WaitGroup
		errs := make([]error, len(admins))
		for i, c := range admins {
			wg.Go(func() {
				p := c.Pipeline()
				for j := range 8 {
					p.Set(ctx, fmt.Sprintf("%s:fill:%d:%d", tag, n, j), value, 0)
				}
				_, errs[i] = p.Exec(ctx)
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return written, gone, total, fmt.Errorf("filler: %w", err)
		}
		written += 8 * int64(len(value))
	}
	// Notifications may trail the last write by a moment.
	select {
	case <-done:
	case <-time.After(100 * time.Millisecond):
	}
	mu.Lock()
	defer mu.Unlock()
	return written, gone, total, nil
}

func usedMemory(ctx context.Context, c *redis.Client) (int64, error) {
	info, err := c.Info(ctx, "memory").Result()
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, errors.New("INFO memory has no used_memory")
}

func configSet(ctx context.Context, c *redis.Client, kv ...string) error {
	for i := 0; i+1 < len(kv); i += 2 {
		if err := c.ConfigSet(ctx, kv[i], kv[i+1]).Err(); err != nil {
			return fmt.Errorf("CONFIG SET %s %s: %w", kv[i], kv[i+1], err)
		}
	}
	return nil
}

func scanKeys(ctx context.Context, c *redis.Client, pattern string) ([]string, error) {
	var out []string
	var cursor uint64
	for range 100_000 {
		keys, next, err := c.Scan(ctx, cursor, pattern, 1000).Result()
		if err != nil {
			return nil, err
		}
		out = append(out, keys...)
		if cursor = next; cursor == 0 {
			return out, nil
		}
	}
	return nil, errors.New("SCAN did not finish")
}

// jumpScript models a forward clock jump on a key: its remaining TTL is
// cut by ARGV[1] ms, and a key whose TTL is shorter expires at once
// (deleted, as its expiry would; a PEXPIRE of 1 ms would tell a client
// that tracks the key that it changed, which a clock jump does not, and
// rueidislock answers that by extending it). Keys without a TTL are
// untouched. Returns 1 if the key had a TTL.
var jumpScript = redis.NewScript(`
local t = redis.call("PTTL", KEYS[1])
if t < 0 then return 0 end
local left = t - tonumber(ARGV[1])
if left < 1 then
  redis.call("DEL", KEYS[1])
else
  redis.call("PEXPIRE", KEYS[1], left)
end
return 1`)

// jumpClock models a clock jump of d on the server behind c for every key
// matching pattern, and returns how many keys it changed.
func jumpClock(ctx context.Context, c *redis.Client, pattern string, d time.Duration) (int, error) {
	keys, err := scanKeys(ctx, c, pattern)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, k := range keys {
		v, err := jumpScript.Run(ctx, c, []string{k}, d.Milliseconds()).Int()
		if err != nil {
			return n, fmt.Errorf("clock jump on %s: %w", k, err)
		}
		n += v
	}
	return n, nil
}

// runLostReply and runLate: schedules 2 and 3, which need per-command
// faults in the proxy; see cmd.go when the build has them.
func runLostReply(ev *Event) error { return runCommandFault(ev, false) }
func runLate(ev *Event) error      { return runCommandFault(ev, true) }
