package main

import (
	"context"
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
	led, err := dialLedger(addrs[0], syncMode)
	if err != nil {
		t.Fatal(err)
	}
	defer led.close()
	key := keyRoot + "test:ledger:" + t.Name()
	c := redis.NewClient(rig.ClientOptions(addrs[0]))
	defer c.Close()
	defer c.Del(context.Background(), key)

	var handover tally
	for range 1000 {
		led.enter(&handover, key)
		led.exit(&handover, key)
	}
	var overlap tally
	led.enter(&overlap, key)
	led.enter(&overlap, key) // a second holder inside: violation
	led.enter(&overlap, key) // and a third: another
	led.exit(&overlap, key)
	led.exit(&overlap, key)
	led.exit(&overlap, key)
	if err := led.barrier(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if got := handover.violations.Load(); got != 0 {
		t.Errorf("violations after 1000 hand-overs = %d; want 0", got)
	}
	if got := overlap.violations.Load(); got != 2 {
		t.Errorf("violations with three holders inside = %d; want 2", got)
	}
	if got, err := c.Get(t.Context(), key).Int(); err != nil || got != 0 {
		t.Errorf("occupancy after all exits = %d, %v; want 0", got, err)
	}
	if f := handover.failed.Load() + overlap.failed.Load(); f != 0 {
		t.Errorf("%d updates got no reply; want 0", f)
	}
}
