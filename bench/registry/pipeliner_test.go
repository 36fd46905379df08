package registry

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/internal/locktest"
)

// TestPipelinersCarryEveryLock: every lock on Redis either sends its
// commands through the AutoPipeliners it is given (Env.Pipeliners) or
// says why its API takes none (NoPipeliner). The lock's own clients dial
// the servers directly and the AutoPipeliners go through counting
// proxies, so a Connect that ignored Env.Pipeliners would run its Lock
// and Unlock with the proxies seeing nothing: the fault scoreboard's
// "batch lost" schedule would then lose no batch of that lock's.
func TestPipelinersCarryEveryLock(t *testing.T) {
	if len(addrs) < 5 {
		t.Fatalf("the test needs 5 servers, have %d", len(addrs))
	}
	var names []string
	for n, im := range Locks {
		if im.System == SysRedis && im.Kind != Floor {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		im := Locks[name]
		t.Run(name, func(t *testing.T) {
			if im.NoPipeliner != "" {
				t.Logf("no AutoPipeliner: %s", im.NoPipeliner)
				return
			}
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			e := Env{Addrs: addrs[:im.Nodes], TTL: 10 * time.Second, Users: &UserClients{Timeout: 2 * time.Second}}
			var counts []*faultproxy.Rule
			for i := range im.Nodes {
				p, c := locktest.ThroughProxy(t, addrs[i])
				ap, err := c.AutoPipeline()
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = ap.Close() })
				e.Pipeliners = append(e.Pipeliners, ap)
				counts = append(counts, p.Count(faultproxy.Match{}))
			}
			con, err := im.Connect(e)
			if err != nil {
				t.Fatalf("Connect on AutoPipeliners: %v", err)
			}
			defer func() { _ = con.Close() }()
			key := KeyRoot + "test:pipeliner:" + name
			l := con.Locker(key)
			if err := l.Lock(ctx); err != nil {
				t.Fatalf("Lock: %v", err)
			}
			if err := l.Unlock(ctx); err != nil {
				t.Fatalf("Unlock: %v", err)
			}
			// A lock on several servers may return at a majority, its
			// commands to the others still on their way: wait for them.
			var silent []int // the servers no command reached yet
			t.Cleanup(func() {
				if t.Failed() && len(silent) > 0 {
					t.Logf("servers %v saw no command", silent)
				}
			})
			locktest.Eventually(t, 5*time.Second, "every server saw a command of Lock and Unlock through the AutoPipeliner given in Env.Pipeliners (set NoPipeliner if the lock's API takes none)", func() bool {
				silent = silent[:0]
				for i, n := range counts {
					if n.Hits() == 0 {
						silent = append(silent, i)
					}
				}
				return len(silent) == 0
			})
			cleanKeys(t, addrs[:im.Nodes], key)
		})
	}
}

// cleanKeys deletes what the lock left under key (fencing's counter).
func cleanKeys(t *testing.T, servers []string, key string) {
	t.Helper()
	for _, a := range servers {
		c := redis.NewClient(&redis.Options{Addr: a})
		iter := c.Scan(context.Background(), 0, key+"*", 100).Iterator()
		for iter.Next(context.Background()) {
			_ = c.Del(context.Background(), iter.Val()).Err()
		}
		_ = c.Close()
	}
}
