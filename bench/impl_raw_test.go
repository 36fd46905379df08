package main

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/rig"
)

// TestRawReceiptReleaseRunTwice checks the two single-server floors'
// releases on a real server as go-redis's resend after a lost reply runs
// them: the same release twice. raw+receipt answers 1 both times; raw
// answers 0 the second time, which is what the receipt is for (if raw
// answered 1, the test could not tell the two apart). Neither answers 1 for
// a token that never held the lock.
func TestRawReceiptReleaseRunTwice(t *testing.T) {
	ctx := t.Context()
	srv, err := startServers(ctx, addrs, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.close()
	c := redis.NewClient(rig.ClientOptions(addrs[0]))
	defer c.Close()

	for _, tc := range []struct {
		script *redis.Script
		name   string
		second int
	}{
		{rawReleaseReceipt, "raw+receipt", 1},
		{rawRelease, "raw", 0},
	} {
		l := &rawLocker{cs: []*redis.Client{c}, key: keyRoot + "test:raw:" + tc.name, ttl: time.Minute, script: tc.script}
		if err := l.Lock(ctx); err != nil {
			t.Fatalf("%s: Lock: %v", tc.name, err)
		}
		if n := l.release(ctx, l.tok); n != 1 {
			t.Errorf("%s: first release = %d; want 1", tc.name, n)
		}
		if n := l.release(ctx, l.tok); n != tc.second {
			t.Errorf("%s: the same release again = %d; want %d", tc.name, n, tc.second)
		}
		if n := l.release(ctx, "never-held"); n != 0 {
			t.Errorf("%s: release of a token that never held the lock = %d; want 0", tc.name, n)
		}
		if err := c.Del(ctx, l.key).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.FlushAll(ctx).Err(); err != nil { // the receipts
		t.Fatal(err)
	}
}
