package measure_test

import (
	"context"
	"maps"
	"math"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/measure"
	"github.com/locklab/locklab/internal/rig"
)

var redisAddr string

func TestMain(m *testing.M) {
	rig.Main(m, 1, func(nodes []*rig.Node) { redisAddr = nodes[0].Addr() })
}

const sampleCommandstats = "# Commandstats\r\n" +
	"cmdstat_set:calls=10,usec=30,usec_per_call=3.00,rejected_calls=0,failed_calls=0\r\n" +
	"cmdstat_evalsha:calls=7,usec=70,usec_per_call=10.00,rejected_calls=1,failed_calls=2\r\n" +
	"cmdstat_client|setinfo:calls=4,usec=4,usec_per_call=1.00,rejected_calls=0,failed_calls=0\r\n" +
	"cmdstat_info:calls=3,usec=90,usec_per_call=30.00,rejected_calls=0,failed_calls=0\r\n"

func TestParseCommandstats(t *testing.T) {
	got, err := measure.ParseCommandstats(sampleCommandstats)
	if err != nil {
		t.Fatal(err)
	}
	want := measure.Commands{"set": 10, "evalsha": 8, "client|setinfo": 4, "info": 3}
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
		if _, err := measure.ParseCommandstats(bad); err == nil {
			t.Errorf("measure.ParseCommandstats(%q) = nil error; want an error", bad)
		}
	}
}

func TestDeltaExcludesAdmin(t *testing.T) {
	before := measure.Commands{"set": 10, "info": 3, "client|setinfo": 1, "get": 5}
	after := measure.Commands{"set": 14, "info": 9, "client|setinfo": 3, "hello": 2, "get": 5, "evalsha": 4, "ping": 8}
	got := measure.Delta(before, after)
	want := measure.Commands{"set": 4, "evalsha": 4}
	if !maps.Equal(got, want) {
		t.Errorf("delta = %v; want %v", got, want)
	}
	if err := got.Subtract(measure.Commands{"set": 1}); err != nil || got["set"] != 3 {
		t.Errorf("subtract 1 set: %v, set = %d; want nil, 3", err, got["set"])
	}
	if err := got.Subtract(measure.Commands{"incr": 1}); err == nil {
		t.Error("subtracting a command that was not counted succeeded; want an error")
	}
}

func TestJain(t *testing.T) {
	tests := []struct {
		name string
		xs   []int64
		want float64
	}{
		{"equal shares", []int64{5, 5, 5, 5}, 1},
		{"one client", []int64{7}, 1},
		{"one of four gets all", []int64{12, 0, 0, 0}, 0.25},
		{"1 and 3", []int64{1, 3}, 0.8}, // 4² / (2·10)
		{"nobody got any", []int64{0, 0}, 0},
		{"no clients", nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := measure.Jain(tt.xs); math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("measure.Jain(%v) = %v; want %v", tt.xs, got, tt.want)
			}
		})
	}
}

// TestSinceCountsScriptInnerCommands checks on a real server that a
// script's redis.call commands count under their own names and that the
// snapshots themselves (INFO) drop out.
func TestSinceCountsScriptInnerCommands(t *testing.T) {
	ctx := context.Background()
	c := redis.NewClient(rig.ClientOptions(redisAddr))
	defer c.Close()
	release := redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`)
	if err := release.Load(ctx, c).Err(); err != nil {
		t.Fatal(err)
	}
	before, err := measure.Snapshot(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "measure-test", "tok", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := release.Run(ctx, c, []string{"measure-test"}, "tok").Err(); err != nil {
		t.Fatal(err)
	}
	after, err := measure.Snapshot(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	got := measure.Since(before, after)
	if want := (measure.Commands{"set": 1, "evalsha": 1, "get": 1, "del": 1}); !maps.Equal(got, want) {
		t.Errorf("Since over SET + release script = %v; want %v", got, want)
	}
	if got.Total() != 4 {
		t.Errorf("Total() = %d; want 4", got.Total())
	}
}

func TestParseCPU(t *testing.T) {
	info := "# CPU\r\nused_cpu_sys:1.250000\r\nused_cpu_user:0.500000\r\nused_cpu_sys_children:9.000000\r\n"
	got, err := measure.ParseCPU(info)
	if err != nil || got != 1750*time.Millisecond {
		t.Errorf("ParseCPU = %v, %v; want 1.75s, nil", got, err)
	}
	for _, bad := range []string{
		"# CPU\r\nused_cpu_sys:1.0\r\n",          // user missing
		"used_cpu_sys:x\r\nused_cpu_user:1\r\n",  // not a number
		"used_cpu_sys:-1\r\nused_cpu_user:1\r\n", // negative
		"",                                       // empty
	} {
		if _, err := measure.ParseCPU(bad); err == nil {
			t.Errorf("ParseCPU(%q): no error", bad)
		}
	}
}

// The CPU time a real server reports grows with the work it is given.
func TestParseCPUOfRealServer(t *testing.T) {
	ctx := context.Background()
	c := redis.NewClient(rig.ClientOptions(redisAddr))
	defer c.Close()
	read := func() time.Duration {
		t.Helper()
		info, err := c.Info(ctx, "cpu").Result()
		if err != nil {
			t.Fatal(err)
		}
		d, err := measure.ParseCPU(info)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	before := read()
	// A script that keeps the server busy for about 50ms of CPU.
	busy := `local x = 0 for i = 1, 5000000 do x = x + i end return x`
	if err := c.Eval(ctx, busy, nil).Err(); err != nil {
		t.Fatal(err)
	}
	if after := read(); after <= before {
		t.Errorf("CPU time %v after a busy script, %v before; want it to grow", after, before)
	}
}
