package main

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/measure"
)

// TestCommandstatsCountsScriptInnerCommands checks, on a real server, that
// a script's redis.call commands are counted under their own names and
// that the bench's snapshots themselves (INFO) drop out of the delta.
func TestCommandstatsCountsScriptInnerCommands(t *testing.T) {
	ctx := t.Context()
	srv, c := oneServer(t)
	key := keyRoot + "test:cmdstats"
	release := redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`)
	if err := release.Load(ctx, c).Err(); err != nil { // SCRIPT LOAD before the snapshot
		t.Fatal(err)
	}

	before, err := srv.commandstats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, key, "tok", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := release.Run(ctx, c, []string{key}, "tok").Err(); err != nil { // EVALSHA + GET + DEL
		t.Fatal(err)
	}
	if _, err := srv.commandstats(ctx); err != nil { // an extra INFO in between
		t.Fatal(err)
	}
	after, err := srv.commandstats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := measure.Delta(before[0], after[0])
	want := measure.Commands{"set": 1, "evalsha": 1, "get": 1, "del": 1}
	if !maps.Equal(got, want) {
		t.Errorf("delta over SET + release script = %v; want %v", got, want)
	}
	info, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(info, "cmdstat_evalsha:") {
		t.Errorf("INFO commandstats has no evalsha line:\n%s", info)
	}
}

// TestRawReceiptReleaseRunTwice checks the two single-server floors'
// releases on a real server as go-redis's resend after a lost reply runs
// them: the same release twice. raw+receipt answers 1 both times; raw
// answers 0 the second time, which is what the receipt is for (if raw
// answered 1, the test could not tell the two apart). Neither answers 1 for
// a token that never held the lock.
func TestRawReceiptReleaseRunTwice(t *testing.T) {
	ctx := t.Context()
	_, c := oneServer(t)

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
