package ledger

import (
	"context"
	"github.com/locklab/locklab/bench/registry"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/rig"
)

// TestLedgerCountsOverlaps drives the occupancy counter directly: an entry
// while someone is inside is a violation; entries one after the other are
// not, however quickly they follow each other.
func TestLedgerCountsOverlaps(t *testing.T) {
	for _, mode := range []string{"async", "sync"} {
		t.Run(mode, func(t *testing.T) { testLedger(t, mode == "sync") })
	}
}

func testLedger(t *testing.T, syncMode bool) {
	led, err := Dial(addrs[0], syncMode)
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	key := registry.KeyRoot + "test:ledger:" + t.Name()
	c := redis.NewClient(rig.ClientOptions(addrs[0]))
	defer c.Close()
	defer c.Del(context.Background(), key)

	var handover Tally
	for range 1000 {
		led.Enter(&handover, key)
		led.Exit(&handover, key)
	}
	var overlap Tally
	led.Enter(&overlap, key)
	led.Enter(&overlap, key) // a second holder inside: violation
	led.Enter(&overlap, key) // and a third: another
	led.Exit(&overlap, key)
	led.Exit(&overlap, key)
	led.Exit(&overlap, key)
	if err := led.Barrier(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if got := handover.Violations.Load(); got != 0 {
		t.Errorf("violations after 1000 hand-overs = %d; want 0", got)
	}
	if got := overlap.Violations.Load(); got != 2 {
		t.Errorf("violations with three holders inside = %d; want 2", got)
	}
	if got, err := c.Get(t.Context(), key).Int(); err != nil || got != 0 {
		t.Errorf("occupancy after all exits = %d, %v; want 0", got, err)
	}
	if f := handover.Failed.Load() + overlap.Failed.Load(); f != 0 {
		t.Errorf("%d updates got no reply; want 0", f)
	}
}

var addrs []string

func TestMain(m *testing.M) {
	rig.Main(m, 1, func(nodes []*rig.Node) {
		for _, n := range nodes {
			addrs = append(addrs, n.Addr())
		}
	})
}
