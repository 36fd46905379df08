package main

import (
	"io"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/locklab/locklab/bench/env"
	"github.com/locklab/locklab/bench/faults"
	"github.com/locklab/locklab/bench/registry"
	"github.com/locklab/locklab/bench/speed"
	"github.com/locklab/locklab/internal/rig"
	"github.com/redis/go-redis/v9"
)

// addrs are the shared servers of the package's tests and benchmarks: five,
// so 5-node locks can run too.
var addrs []string

func TestMain(m *testing.M) {
	if spec := os.Getenv(env.FaultChildEnv); spec != "" {
		os.Exit(faults.FaultChildMain(spec)) // a fault scoreboard client process
	}
	rig.Main(m, 5, func(nodes []*rig.Node) {
		for _, n := range nodes {
			addrs = append(addrs, n.Addr())
		}
	})
}

// oneServer returns the bench's view of the first shared server and a
// client of it, both closed when t ends.
func oneServer(t *testing.T) (*env.Servers, *redis.Client) {
	t.Helper()
	srv, err := env.StartServers(t.Context(), addrs, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	c := redis.NewClient(rig.ClientOptions(addrs[0]))
	t.Cleanup(func() { c.Close() })
	return srv, c
}

// TestHoldsOverlapOnlyInTheKeysCell: of the cells the default plan runs,
// only the keys cells have holders at once; the one-key cells, where each
// hold blocks a thread in nanosleep, must have one holder at a time, or
// their holds would park every P (see hold_linux.go).
func TestHoldsOverlapOnlyInTheKeysCell(t *testing.T) {
	c, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, cl := range speed.Cells(c) {
		if got, want := cl.HoldsOverlap(), cl.Scenario == speed.ScKeys; got != want {
			t.Errorf("cell %v: holdsOverlap() = %v; want %v", cl, got, want)
		}
	}
	one := speed.Cell{Scenario: speed.ScKeys, Clients: 64, Hold: time.Millisecond, Keys: 1}
	if one.HoldsOverlap() {
		t.Errorf("cell %v: holdsOverlap() = true; want false (one key, one holder)", one)
	}
}

// TestHoldForLastsAtLeastTheHold checks the lower bound only: an upper
// bound would be a timing assertion on a shared machine. How close the
// hold comes to the target is reported by every run (held p50).
func TestHoldForLastsAtLeastTheHold(t *testing.T) {
	for _, overlapping := range []bool{false, true} {
		for _, d := range []time.Duration{time.Microsecond, 300 * time.Microsecond, 2 * time.Millisecond} {
			start := time.Now()
			env.HoldFor(d, overlapping)
			if got := time.Since(start); got < d {
				t.Errorf("holdFor(%v, %v) returned after %v", d, overlapping, got)
			}
		}
	}
}

// TestControlNeedsTwoRounds: the A/A control runs by default, but not in
// the one-round -quick preset, unless -impls names it.
func TestControlNeedsTwoRounds(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{nil, true},
		{[]string{"-quick"}, false},
		{[]string{"-rounds", "1"}, false},
		{[]string{"-quick", "-impls", "raw,raw-again"}, true},
	} {
		cfg, err := parseFlags(tc.args, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		impls, err := registry.Resolve(cfg.Impls)
		if err != nil {
			t.Fatal(err)
		}
		got := slices.ContainsFunc(speed.DropLoneControl(impls, cfg), func(im *registry.Lock) bool { return im.Name == "raw-again" })
		if got != tc.want {
			t.Errorf("%q: raw-again runs: %v, want %v", tc.args, got, tc.want)
		}
	}
}
