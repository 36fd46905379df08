package faults

import (
	"testing"
	"time"

	"github.com/locklab/locklab/bench/registry"
)

// TestStuckAfterScales: a run's stall bound is the schedule's, counted in
// the lock's own leases, for every schedule and every system it applies
// to. A bound of 6 s times a lease of 2 s once overflowed time.Duration's
// nanoseconds and came out negative (every crash run read stuck), and
// 4 s times 5 s wrapped to 311 ms (restart, eviction, clock).
func TestStuckAfterScales(t *testing.T) {
	for _, s := range Schedules {
		for _, sys := range []string{registry.SysRedis, registry.SysEtcd, registry.SysZooKeeper, registry.SysPostgres} {
			im := &registry.Lock{Name: "test-" + sys, System: sys, Transactional: true}
			if !s.AppliesTo(im) {
				continue
			}
			r := &FaultRun{Ev: &Event{Sch: s}, Im: im}
			got, lease := r.StuckAfter(), r.Lease()
			want := time.Duration(float64(s.StuckAfter) / float64(s.TTL) * float64(lease))
			if got < s.StuckAfter || got != want {
				t.Errorf("%s on %s: stuckAfter = %v (bound %v, lease %v of the schedule's %v); want %v", s.ID, sys, got, s.StuckAfter, lease, s.TTL, want)
			}
		}
	}
}
