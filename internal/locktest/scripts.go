package locktest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/internal/rig"
)

// The helpers below are for the Redis locks' tests.

// ScriptsLoad loads each of a Redis lock's scripts into the server behind
// c and checks that the server computes the SHA1 that EVALSHA will send,
// and then knows the script by it.
func ScriptsLoad(t *testing.T, c redis.Scripter, scripts map[string]*redis.Script) {
	ctx := context.Background()
	for name, s := range scripts {
		sha, err := s.Load(ctx, c).Result()
		if err != nil {
			t.Errorf("SCRIPT LOAD %s: %v", name, err)
			continue
		}
		if sha != s.Hash() {
			t.Errorf("SCRIPT LOAD %s = %s; want %s", name, sha, s.Hash())
		}
		if ok := c.ScriptExists(ctx, sha).Val(); len(ok) != 1 || !ok[0] {
			t.Errorf("SCRIPT EXISTS %s = %v; want [true]", name, ok)
		}
	}
}

// Client returns a new client of the server at addr on the rig's options
// (which honour a context's deadline), with its own connection pool, as a
// separate process would have; it is closed when the test ends.
func Client(t testing.TB, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(rig.ClientOptions(addr))
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// ThroughProxy returns a fault proxy in front of the server at addr and a
// go-redis client through it on go-redis's default options, which send a
// command again when its reply is lost; both end with the test.
func ThroughProxy(t *testing.T, addr string) (*faultproxy.Proxy, *redis.Client) {
	t.Helper()
	p := faultproxy.Start(t, addr)
	c := redis.NewClient(rig.UserOptions(p.Addr()))
	t.Cleanup(func() { _ = c.Close() })
	return p, c
}

// LoseReply has p lose the reply to the next command that matches m, and
// runs call, which sends that command: go-redis, on its default options,
// sends it again. It fails t unless call returns nil and the reply was
// lost. what names the call in the failure ("Lock", "inner Unlock").
func LoseReply(t *testing.T, p *faultproxy.Proxy, m faultproxy.Match, what string, call func() error) {
	t.Helper()
	lost := p.DropReply(m, 1)
	if err := call(); err != nil {
		t.Fatalf("%s whose reply was lost = %v; want nil", what, err)
	}
	if lost.Hits() != 1 {
		t.Fatalf("the %s's reply was not lost (%d hits)", what, lost.Hits())
	}
}

var keySeq atomic.Int64

// Key returns a Redis key no other test of the process uses,
// "<prefix>:<test name>:<n>", and deletes it from c when the test ends.
func Key(t *testing.T, c redis.Cmdable, prefix string) string {
	t.Helper()
	key := fmt.Sprintf("%s:%s:%d", prefix, t.Name(), keySeq.Add(1))
	t.Cleanup(func() { c.Del(context.Background(), key) })
	return key
}

// WaitGone waits until key no longer exists on c, failing t after d.
func WaitGone(t *testing.T, c redis.Cmdable, key string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		n, err := c.Exists(context.Background(), key).Result()
		if err == nil && n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("key %q still there after %v (EXISTS = %d, %v)", key, d, n, err)
		}
		time.Sleep(2 * time.Millisecond) // poll interval, not a wait for an event
	}
}

// CheckGone fails t unless key no longer exists on c; when says when, for
// the message ("after Unlock").
func CheckGone(t testing.TB, c redis.Cmdable, key, when string) {
	t.Helper()
	if n := c.Exists(context.Background(), key).Val(); n != 0 {
		t.Errorf("EXISTS %s %s = %d; want 0", key, when, n)
	}
}

// ScanKeys lists the keys on c matching pattern, with SCAN (never KEYS),
// failing t if the scan fails or takes more than 15s. SCAN walks the whole
// keyspace whatever the pattern, and a server shared by many tests holds
// many release receipts (each lives a TTL: see internal/retry's
// ReceiptFor), so each call asks for 1000 keys: at 100, a walk after 1000
// waiters on five nodes ran out of 5s under -race on a loaded machine.
func ScanKeys(t testing.TB, c redis.Cmdable, pattern string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var keys []string
	iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatalf("SCAN %s: %v", pattern, err)
	}
	return keys
}
