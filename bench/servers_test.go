package main

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/internal/keyslot"
	"github.com/locklab/locklab/internal/locktest"
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

// TestRawReceiptReleaseLostReply checks the single-server floors' releases
// against a real lost reply: the fault proxy drops the EVALSHA's reply,
// and go-redis, on its default options, sends it again. raw+receipt
// answers 1 all the same; raw answers 0, which is what the receipt is for
// (if raw answered 1, the test could not tell the two apart). Neither
// answers 1 for a token that never held the lock.
func TestRawReceiptReleaseLostReply(t *testing.T) {
	ctx := t.Context()
	for _, tc := range []struct {
		script *redis.Script
		name   string
		want   int
	}{
		{rawReleaseReceipt, "raw+receipt", 1},
		{rawRelease, "raw", 0},
	} {
		p, c := locktest.ThroughProxy(t, addrs[0])
		key := keyRoot + "test:raw:" + tc.name
		l := &rawLocker{cs: []*redis.Client{c}, key: key, base: keyslot.Base(key), ttl: time.Minute, script: tc.script}
		if err := tc.script.Load(ctx, c).Err(); err != nil { // so the resend is an EVALSHA too
			t.Fatal(err)
		}
		if err := l.Lock(ctx); err != nil {
			t.Fatalf("%s: Lock: %v", tc.name, err)
		}
		lost := p.DropReply(faultproxy.Match{Command: "EVALSHA", Key: key}, 1)
		if n := l.release(ctx, l.tok); n != tc.want {
			t.Errorf("%s: release whose reply was lost, sent again = %d; want %d", tc.name, n, tc.want)
		}
		if lost.Hits() != 1 {
			t.Errorf("%s: the release's reply was not lost (%d hits)", tc.name, lost.Hits())
		}
		if n := l.release(ctx, "never-held"); n != 0 {
			t.Errorf("%s: release of a token that never held the lock = %d; want 0", tc.name, n)
		}
		if err := c.Del(ctx, key, keyslot.Receipt(l.base, l.tok)).Err(); err != nil {
			t.Fatal(err)
		}
	}
}
