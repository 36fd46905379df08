package main

import (
	"maps"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/rig"
)

const sampleCommandstats = "# Commandstats\r\n" +
	"cmdstat_set:calls=10,usec=30,usec_per_call=3.00,rejected_calls=0,failed_calls=0\r\n" +
	"cmdstat_evalsha:calls=7,usec=70,usec_per_call=10.00,rejected_calls=1,failed_calls=2\r\n" +
	"cmdstat_client|setinfo:calls=4,usec=4,usec_per_call=1.00,rejected_calls=0,failed_calls=0\r\n" +
	"cmdstat_info:calls=3,usec=90,usec_per_call=30.00,rejected_calls=0,failed_calls=0\r\n"

func TestParseCommandstats(t *testing.T) {
	got, err := parseCommandstats(sampleCommandstats)
	if err != nil {
		t.Fatal(err)
	}
	want := cmdCounts{"set": 10, "evalsha": 8, "client|setinfo": 4, "info": 3}
	if !maps.Equal(got, want) {
		t.Errorf("parseCommandstats = %v; want %v", got, want)
	}

	for _, bad := range []string{
		"cmdstat_get calls=1",                // no colon
		"keyspace_hits:1",                    // not a command line
		"cmdstat_get:usec=1",                 // no calls
		"cmdstat_get:calls=x,usec=1",         // not a number
		"cmdstat_get:calls=1,usec,rejected=", // malformed field
	} {
		if _, err := parseCommandstats(bad); err == nil {
			t.Errorf("parseCommandstats(%q) = nil error; want an error", bad)
		}
	}
}

func TestDeltaExcludesAdmin(t *testing.T) {
	before := cmdCounts{"set": 10, "info": 3, "client|setinfo": 1, "get": 5}
	after := cmdCounts{"set": 14, "info": 9, "client|setinfo": 3, "hello": 2, "get": 5, "evalsha": 4, "ping": 8}
	got := delta(before, after)
	want := cmdCounts{"set": 4, "evalsha": 4}
	if !maps.Equal(got, want) {
		t.Errorf("delta = %v; want %v", got, want)
	}
	if err := got.subtract(cmdCounts{"set": 1}); err != nil || got["set"] != 3 {
		t.Errorf("subtract 1 set: %v, set = %d; want nil, 3", err, got["set"])
	}
	if err := got.subtract(cmdCounts{"incr": 1}); err == nil {
		t.Error("subtracting a command that was not counted succeeded; want an error")
	}
}

// TestCommandstatsCountsScriptInnerCommands checks, on a real server, that
// a script's redis.call commands are counted under their own names and
// that the bench's snapshots themselves (INFO) drop out of the delta.
func TestCommandstatsCountsScriptInnerCommands(t *testing.T) {
	ctx := t.Context()
	srv, err := startServers(ctx, addrs, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.close()
	c := redis.NewClient(rig.ClientOptions(addrs[0]))
	defer c.Close()
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
	got := delta(before[0], after[0])
	want := cmdCounts{"set": 1, "evalsha": 1, "get": 1, "del": 1}
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
