package rig_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/internal/proc"
	"github.com/locklab/locklab/internal/rig"
)

// TestSentinelFailover kills the primary of a primary+replica pair watched
// by three sentinels and checks that the sentinels promote the replica,
// which then accepts writes.
func TestSentinelFailover(t *testing.T) {
	rig.RequireControl(t)
	ctx := ctxFor(t)
	nodes := rig.StartN(t, 2)
	primary, replica := nodes[0], nodes[1]
	if err := replica.ReplicaOf(ctx, primary.Addr()); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	s := rig.StartSentinels(t, primary, 3)
	t.Logf("3 sentinels ready in %v", time.Since(start).Round(time.Millisecond))

	if got := len(s.Addrs()); got != 3 {
		t.Fatalf("len(Addrs()) = %d; want 3", got)
	}
	got, err := s.MasterAddr(ctx)
	if err != nil || got != primary.Addr() {
		t.Fatalf("MasterAddr() = %q, %v; want %q", got, err, primary.Addr())
	}
	strays, err := rig.Strays()
	if err != nil {
		t.Fatal(err)
	}
	if len(strays) < 5 {
		t.Errorf("Strays() = %v with 2 servers and 3 sentinels running; want at least 5 pids", strays)
	}

	if err := primary.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	newAddr, err := s.WaitFailover(wctx, primary.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("failover in %v", time.Since(killed).Round(time.Millisecond))
	if newAddr != replica.Addr() {
		t.Fatalf("WaitFailover() = %q; want the replica %q", newAddr, replica.Addr())
	}
	if err := replica.Client().Set(ctx, "k", "after failover", 0).Err(); err != nil {
		t.Fatalf("write to the promoted replica = %v; want OK", err)
	}
	if got, err := s.MasterAddr(ctx); err != nil || got != replica.Addr() {
		t.Errorf("MasterAddr() after failover = %q, %v; want %q", got, err, replica.Addr())
	}
}

// TestSentinelCloseLeavesNoProcess checks that Close kills every sentinel.
// Other test binaries may start and stop rig servers meanwhile, so it
// follows the sentinels' own pids, found by their addresses in the process
// titles that rig.Strays matches.
func TestSentinelCloseLeavesNoProcess(t *testing.T) {
	rig.RequireControl(t)
	ctx := ctxFor(t)
	primary := rig.Start(t)
	s, err := rig.NewSentinels(ctx, primary, 2)
	if err != nil {
		t.Fatal(err)
	}
	pids := sentinelPids(t, s)
	if len(pids) != 2 {
		t.Fatalf("Strays() lists %d processes with the sentinels' addresses %v; want 2", len(pids), s.Addrs())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close() = %v; want nil", err)
	}
	for _, pid := range pids {
		if st := proc.State(pid); st != "" {
			t.Errorf("sentinel %d in state %q after Close; want gone", pid, st)
		}
	}
	if left := sentinelPids(t, s); len(left) != 0 {
		t.Errorf("Strays() after Close still lists sentinels %v", left)
	}
}

// sentinelPids returns the pids among rig.Strays whose process title
// names one of s's addresses.
func sentinelPids(t *testing.T, s *rig.Sentinels) []int {
	t.Helper()
	strays, err := rig.Strays()
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, pid := range strays {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if err != nil {
			continue
		}
		for _, a := range s.Addrs() {
			if strings.Contains(string(b), " "+a+" ") {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

func TestSentinelBadInput(t *testing.T) {
	rig.RequireControl(t)
	ctx := ctxFor(t)
	primary := rig.Start(t)
	if _, err := rig.NewSentinels(ctx, primary, 0); err == nil {
		t.Error("NewSentinels(n=0) succeeded; want an error")
	}
	if _, err := rig.NewSentinels(ctx, nil, 3); err == nil {
		t.Error("NewSentinels(nil primary) succeeded; want an error")
	}
}
