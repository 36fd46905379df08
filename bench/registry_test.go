package main

import (
	"slices"
	"testing"

	"github.com/locklab/locklab/bench/faults"
	"github.com/locklab/locklab/bench/registry"
	"github.com/locklab/locklab/bench/speed"
)

// TestRegistryTraits fails when a registered lock lacks a trait the bench
// and its reports need: a way to connect, a kind, a place in the tables,
// a system and scenarios the bench knows, the peer and floor its ratios
// are taken against, and, under the fault scoreboard, its claims, each
// about a schedule that applies to it. A schedule a lock makes no claim
// about is allowed: faults.md says so where the lock is unsafe under it,
// so adding a schedule does not touch every lock's file.
func TestRegistryTraits(t *testing.T) {
	orders := map[int]string{}
	for name, im := range registry.Locks {
		if im.Connect == nil || im.GaveUp == nil {
			t.Errorf("%s: registered without Connect or GaveUp", name)
		}
		switch im.Kind {
		case registry.Ours, registry.Peer, registry.Floor, registry.Naive:
		default:
			t.Errorf("%s: kind %q is none of ours, peer, floor, naive", name, im.Kind)
		}
		if !slices.Contains([]string{registry.SysRedis, registry.SysEtcd, registry.SysZooKeeper, registry.SysPostgres}, im.System) {
			t.Errorf("%s: system %q is none the fault schedules know", name, im.System)
		}
		for _, sc := range im.Scenarios {
			if !slices.Contains(speed.AllScenarios, sc) {
				t.Errorf("%s: scenario %q is not one of %v", name, sc, speed.AllScenarios)
			}
		}
		if im.System == registry.SysRedis && im.Kind != registry.Naive {
			if im.Order == 0 {
				t.Errorf("%s: no Order: the report's tables and plots have no place for it", name)
			} else if other, dup := orders[im.Order]; dup {
				t.Errorf("%s and %s share Order %d", name, other, im.Order)
			}
			orders[im.Order] = name
		}
		for _, peer := range []string{im.Baseline(), im.Floor()} {
			if _, ok := registry.Locks[peer]; !ok {
				t.Errorf("%s: its ratios are taken against %s, which is not registered", name, peer)
			}
		}
		if im.NoFaults != "" || im.Kind == registry.Floor || im.Kind == registry.Peer {
			continue
		}
		if len(im.Claims) == 0 {
			t.Errorf("%s runs under the fault scoreboard but claims nothing (its Claims field)", name)
		}
		for id, c := range im.Claims {
			if s := faults.ScheduleByID(id); s == nil || !s.AppliesTo(im) {
				t.Errorf("%s's Claims[%s] (%s): no such schedule applies to it", name, id, c.Verdict)
			}
		}
	}
	for _, c := range registry.ChapterClaims {
		if _, ok := registry.Locks[c.Impl]; !ok {
			t.Errorf("ChapterClaims: %q (%s) is no registered lock: its row would never show", c.Impl, c.System)
		}
	}
}
