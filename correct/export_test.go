package correct

import (
	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/retry"
	"github.com/locklab/locklab/internal/take"
)

// Exported for the tests in package correct_test.
var (
	// Scripts maps each embedded .lua file to its source and the script
	// that runs it (the source, after handoff.lua for the scripts that
	// hand the lock over).
	Scripts = map[string]struct {
		Src    string
		Script *redis.Script
	}{
		"take.lua":    {take.Src, take.Script},
		"release.lua": {releaseLua, releaseScript},
		"enqueue.lua": {enqueueLua, enqueueScript},
		"queued.lua":  {queuedLua, queuedScript},
		"extend.lua":  {extendLua, extendScript},
		"ttl.lua":     {ttlLua, ttlScript},
	}

	// HandoffLua is the shared hand-off step.
	HandoffLua = handoffLua

	// Backoff is the default DelayFunc.
	Backoff = retry.Backoff

	// ReceiptMS is how long a release's receipt lives, for the scripts.
	ReceiptMS = retry.ReceiptMS
)
