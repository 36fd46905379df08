package main

import (
	"maps"
	"strings"
	"testing"

	"github.com/locklab/locklab/bench/env"
	"github.com/locklab/locklab/internal/measure"
	"github.com/redis/go-redis/v9"
)

// TestCommandstatsCountsScriptInnerCommands checks, on a real server, that
// a script's redis.call commands are counted under their own names and
// that the bench's snapshots themselves (INFO) drop out of the delta.
func TestCommandstatsCountsScriptInnerCommands(t *testing.T) {
	ctx := t.Context()
	srv, c := oneServer(t)
	key := env.KeyRoot + "test:cmdstats"
	release := redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`)
	if err := release.Load(ctx, c).Err(); err != nil { // SCRIPT LOAD before the snapshot
		t.Fatal(err)
	}

	before, err := srv.Commandstats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, key, "tok", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := release.Run(ctx, c, []string{key}, "tok").Err(); err != nil { // EVALSHA + GET + DEL
		t.Fatal(err)
	}
	if _, err := srv.Commandstats(ctx); err != nil { // an extra INFO in between
		t.Fatal(err)
	}
	after, err := srv.Commandstats(ctx)
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
