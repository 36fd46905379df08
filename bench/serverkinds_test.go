package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/bench/env"
	"github.com/locklab/locklab/bench/registry"
	"github.com/locklab/locklab/bench/report"
	"github.com/locklab/locklab/bench/speed"
)

// TestServerFlag: -server takes redis, valkey or both; without it rows
// carry no server (the rig's choice, as before -server existed); a bad
// list, or two kinds with the fixed servers of -addrs, is an error.
func TestServerFlag(t *testing.T) {
	tests := []struct {
		args    []string
		want    []string
		wantErr string
	}{
		{nil, nil, ""},
		{[]string{"-server", "redis"}, []string{"redis"}, ""},
		{[]string{"-server", "redis,valkey"}, []string{"redis", "valkey"}, ""},
		{[]string{"-server", " valkey , redis "}, []string{"valkey", "redis"}, ""},
		{[]string{"-server", "keydb"}, nil, `unknown kind "keydb"; known: redis, valkey`},
		{[]string{"-server", "redis,redis"}, nil, `"redis" listed twice`},
		{[]string{"-server", ""}, nil, "empty entry"},
		{[]string{"-server", "redis,valkey", "-addrs", "127.0.0.1:1"}, nil, "with -addrs the servers are given"},
		{[]string{"-server", "valkey", "-addrs", "127.0.0.1:1"}, []string{"valkey"}, ""},
	}
	for _, tt := range tests {
		c, err := parseFlags(tt.args, io.Discard)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("parseFlags(%q) = %v; want an error containing %q", tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(c.Servers, tt.want) {
			t.Errorf("parseFlags(%q): servers %q, %v; want %q", tt.args, c.Servers, err, tt.want)
		}
	}
}

// TestStepsOnEveryServer: with two kinds every Redis lock runs every cell
// on both in every round, a lock on another system only on the first
// kind, and the kinds' order in a cell rotates with the rounds.
func TestStepsOnEveryServer(t *testing.T) {
	a, b := &registry.Lock{Name: "a"}, &registry.Lock{Name: "b"}
	e := &registry.Lock{Name: "etcd-test", System: registry.SysEtcd}
	cfg := &speed.Config{Scenarios: []string{speed.ScUncontended, speed.ScContended}, Clients: []int{2}, Holds: []time.Duration{0},
		Servers: []string{env.ServerRedis, env.ServerValkey}}
	cs := speed.Cells(cfg)
	if len(cs) != 4 || cs[0].Server != env.ServerRedis || cs[1].Server != env.ServerValkey || !speed.SameBut(cs[0], cs[1]) {
		t.Fatalf("cells = %v; want each cell on redis then valkey", cs)
	}
	var got []string
	for _, s := range speed.Steps(2, cs, []*registry.Lock{a, b, e}) {
		got = append(got, fmt.Sprintf("%d %s %s %s", s.Round, s.Cell.Scenario, s.Cell.Server, s.Impl.Name))
	}
	want := []string{
		"0 uncontended redis a", "0 uncontended redis b", "0 uncontended redis etcd-test",
		"0 uncontended valkey a", "0 uncontended valkey b",
		"0 contended redis a", "0 contended redis b", "0 contended redis etcd-test",
		"0 contended valkey a", "0 contended valkey b",
		"1 uncontended valkey b", "1 uncontended valkey a",
		"1 uncontended redis b", "1 uncontended redis etcd-test", "1 uncontended redis a",
		"1 contended valkey b", "1 contended valkey a",
		"1 contended redis b", "1 contended redis etcd-test", "1 contended redis a",
	}
	if !slices.Equal(got, want) {
		t.Errorf("steps =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Without -server, the plan is today's: no server in any cell, and
	// the default plan's files keep their names.
	cfg.Servers = nil
	for _, c := range speed.Cells(cfg) {
		if c.Server != "" || strings.Contains(c.ID(), "redis") {
			t.Errorf("cell %v without -server has server %q, id %s; want none", c, c.Server, c.ID())
		}
	}
	if id := (speed.Cell{Scenario: speed.ScContended, Clients: 2, Server: env.ServerValkey}).ID(); id != "contended_c2_h0_valkey" {
		t.Errorf("a Valkey cell's id = %s; want contended_c2_h0_valkey", id)
	}
}

// TestServerSectionRatios: the Valkey/Redis table of made-up runs shows,
// per lock and cell, each figure's median on both kinds and the median of
// the same-round ratios (not the ratio of the medians); with one kind
// there is no table.
func TestServerSectionRatios(t *testing.T) {
	correct, raw := registry.Locks["correct"], registry.Locks["raw"]
	base := speed.Cell{Scenario: speed.ScContended, Clients: 2, Keys: 1}
	onRedis, onValkey := base, base
	onRedis.Server, onValkey.Server = env.ServerRedis, env.ServerValkey
	cs := []speed.Cell{onRedis, onValkey}
	// Ops per round: correct on Redis 1000, 2000, 4000; on Valkey 1100,
	// 1800, 4400. Same-round ratios 1.1, 0.9, 1.1: median 1.10 (the
	// medians' ratio would be 1800/2000 = 0.90).
	redisOps, valkeyOps := []int64{1000, 2000, 4000}, []int64{1100, 1800, 4400}
	var runs []*speed.RunResult
	for round := range 3 {
		for _, im := range []*registry.Lock{correct, raw} {
			r := fakeRun(im, onRedis, round, redisOps[round], []int64{100, 200}, []int64{redisOps[round] / 2, redisOps[round] / 2})
			r.ServerCPU = time.Duration(redisOps[round]) * 10 * time.Microsecond
			v := fakeRun(im, onValkey, round, valkeyOps[round], []int64{100, 400}, []int64{valkeyOps[round] / 2, valkeyOps[round] / 2})
			v.ServerCPU = time.Duration(valkeyOps[round]) * 15 * time.Microsecond
			v.Expiring = 10
			runs = append(runs, r, v)
		}
	}
	cfg := &speed.Config{Duration: time.Second, Rounds: 3, MaxOps: speed.DefaultMaxOps, TTL: speed.DefaultTTL, Keys: 1024, Rtt: time.Millisecond,
		Check: "async", Servers: []string{env.ServerRedis, env.ServerValkey}}
	res := report.NewResults(cfg, report.Machine{}, cs, []*registry.Lock{correct, raw}, runs)

	for _, r := range res.Rows {
		if r.Server == "" {
			t.Errorf("row %s %s has no server", r.Impl, r.Scenario)
		}
	}
	sec := res.ServerSection()
	for _, want := range []string{
		"## Valkey / Redis",
		"| lock | cell | acq/s Redis | Valkey | × | wait p99 Redis | Valkey | × | server CPU/acq Redis | Valkey | × |",
		"| correct | contended, 2 clients, hold 0 | 2000 | 1800 | 1.10× | 200 µs | 400 µs | 2.00× | 10 µs | 15 µs | 1.50× |",
		"| raw | contended, 2 clients, hold 0 | 2000 | 1800 | 1.10× |",
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("serverSection lacks %q:\n%s", want, sec)
		}
	}
	// The scenario tables put a lock's rows on both kinds together.
	tables := res.Tables()
	if !strings.Contains(tables, "| impl | server | N |") ||
		!regexp.MustCompile(`\| correct \| redis \|[^\n]*\n\| correct \| valkey \|`).MatchString(tables) {
		t.Errorf("tables do not show correct on redis and on valkey side by side:\n%s", tables)
	}
	if !strings.Contains(tables, "- correct on valkey N=2 hold 0: 30 keys with a TTL") || strings.Contains(tables, "- correct on redis N=2") {
		t.Errorf("the tables' notes do not name the server of the row they are about:\n%s", tables)
	}
	cfg.Servers = cfg.Servers[:1]
	if sec := res.ServerSection(); sec != "" {
		t.Errorf("serverSection with one kind = %q; want none", sec)
	}
}

// TestServerKindsEndToEnd runs the bench with -server redis,valkey on
// rig-started servers of both kinds, small, and checks that every lock has
// a row on each, that the report has the Valkey/Redis table, and that the
// machine names both servers' versions.
func TestServerKindsEndToEnd(t *testing.T) {
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	err := run(t.Context(), []string{"-server", "redis,valkey", "-scenarios", "uncontended,contended", "-impls", "correct,redislock,raw",
		"-clients", "2", "-hold", "0", "-duration", "200ms", "-rounds", "2", "-plots=false", "-out", dir}, &out, &errOut)
	if err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, errOut.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rows []speed.Row
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, r := range rows {
		got[r.Impl+" "+r.Scenario+" "+r.Server] = true
		if r.OpsPerSec <= 0 || r.Violations != 0 || r.Errors != 0 || r.ServerCPUUsPerOp <= 0 {
			t.Errorf("%s %s on %s: ops/s %v, violations %d, errors %d (%s), server CPU/acq %v; want > 0, 0, 0, > 0",
				r.Impl, r.Scenario, r.Server, r.OpsPerSec, r.Violations, r.Errors, r.LastError, r.ServerCPUUsPerOp)
		}
	}
	for _, im := range []string{"correct", "redislock", "raw"} {
		for _, sc := range []string{speed.ScUncontended, speed.ScContended} {
			for _, k := range []string{env.ServerRedis, env.ServerValkey} {
				if !got[im+" "+sc+" "+k] {
					t.Errorf("no row for %s %s on %s; rows: %v", im, sc, k, got)
				}
			}
		}
	}
	report, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	for _, want := range []string{"## Valkey / Redis", "| correct | contended, 2 clients, hold 0 |", "| -server redis | redis-server 7", "the servers above", "| -server valkey | valkey-server 8"} {
		if !bytes.Contains(report, []byte(want)) {
			t.Errorf("report.md lacks %q:\n%s", want, report)
		}
	}
	if !strings.Contains(errOut.String(), "contended c=2 hold=0 on valkey") {
		t.Errorf("progress does not name the server:\n%s", errOut.String())
	}
}
