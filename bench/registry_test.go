package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/locklab/locklab/bench/faults"
	"github.com/locklab/locklab/bench/registry"
	"github.com/locklab/locklab/bench/speed"
)

// TestRegistryTraits fails when a registered lock lacks a trait the bench
// and its reports need: a way to connect, a kind, a place in the tables,
// a system and scenarios the bench knows, the peer and floor its ratios
// are taken against (on its own kind of client), its run on go-redis
// AutoPipeliners or why it has none, and, under the fault scoreboard, its
// claims, each about a schedule that applies to it. A schedule a lock makes no claim
// about is allowed: faults.md says so where the lock is unsafe under it,
// so adding a schedule does not touch every lock's file.
func TestRegistryTraits(t *testing.T) {
	type place struct {
		order     int
		pipelined bool
	}
	orders := map[place]string{}
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
			} else if other, dup := orders[place{im.Order, im.Pipelined}]; dup {
				t.Errorf("%s and %s share Order %d", name, other, im.Order)
			}
			orders[place{im.Order, im.Pipelined}] = name
		}
		for _, peer := range []string{im.Baseline(), im.Floor()} {
			if p, ok := registry.Locks[peer]; !ok {
				t.Errorf("%s: its ratios are taken against %s, which is not registered", name, peer)
			} else if p.Pipelined != im.Pipelined {
				t.Errorf("%s (on %s clients): its ratios are taken against %s, on %s clients", name, im.ClientKind(), peer, p.ClientKind())
			}
		}
		checkPipelined(t, im)
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

// checkPipelined checks im's traits of the AutoPipeliner (-client): a lock
// on Redis has a run on AutoPipeliners, its twin but for the name and
// Pipelined, or says why not (NoPipeliner); no other lock has one; the
// default plan runs on them only locks that have one.
func checkPipelined(t *testing.T, im *registry.Lock) {
	t.Helper()
	v := im.OnPipeliners()
	switch {
	case im.Pipelined:
		base, ok := registry.Locks[strings.TrimSuffix(im.Name, registry.PipelinedSuffix)]
		if !ok || !strings.HasSuffix(im.Name, registry.PipelinedSuffix) || base.OnPipeliners() != im {
			t.Errorf("%s: Pipelined, but not the run on AutoPipeliners of a registered lock", im.Name)
		} else if base.Nodes != im.Nodes || base.Kind != im.Kind || base.Order != im.Order || base.System != im.System || im.NoFaults == "" {
			t.Errorf("%s: nodes, kind, order, system %d %s %d %s; want its lock's, %d %s %d %s, and out of the fault scoreboard",
				im.Name, im.Nodes, im.Kind, im.Order, im.System, base.Nodes, base.Kind, base.Order, base.System)
		}
	case im.System != registry.SysRedis:
		if v != nil || im.NoPipeliner != "" || im.PipelinedInDefault {
			t.Errorf("%s: a lock on %s with a run on AutoPipeliners, NoPipeliner or PipelinedInDefault", im.Name, im.System)
		}
	case (v == nil) == (im.NoPipeliner == ""):
		t.Errorf("%s: on Redis, run on AutoPipeliners %v, NoPipeliner %q: want one or the other", im.Name, v != nil, im.NoPipeliner)
	case im.PipelinedInDefault && v == nil:
		t.Errorf("%s: PipelinedInDefault without a run on AutoPipeliners", im.Name)
	}
}
