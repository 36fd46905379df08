package correct_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/leakcheck"
	"github.com/locklab/locklab/internal/locktest"
	"github.com/locklab/locklab/internal/rig"
)

// TestFailoverClient locks through the Sentinel-backed client of
// redis.NewFailoverClient: it asks a sentinel for the primary's address,
// then talks to the primary.
func TestFailoverClient(t *testing.T) {
	rig.RequireControl(t) // sentinels are processes the rig starts
	leakcheck.Guard(t)
	primary := rig.Start(t)
	sentinels := rig.StartSentinels(t, primary, 1)
	ctx := testContext(t)
	client := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:    sentinels.MasterName(),
		SentinelAddrs: sentinels.Addrs(),
		MaxRetries:    -1,
	})
	defer client.Close()

	exercise(t, ctx, client, "correct-test:failover")
	if left := locktest.ScanKeys(t, primary.Client(), "correct-test:*"); len(left) > 0 {
		t.Errorf("keys left: %q", left)
	}
}
