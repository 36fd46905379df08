package correct

import "github.com/redis/go-redis/v9"

// Exported for the tests in package correct_test.
var (
	// Scripts maps each embedded .lua file to the script made from it.
	Scripts = map[string]struct {
		Src    string
		Script *redis.Script
	}{
		"release.lua": {releaseLua, releaseScript},
		"extend.lua":  {extendLua, extendScript},
		"ttl.lua":     {ttlLua, ttlScript},
		"queued.lua":  {queuedLua, queuedScript},
	}

	// Backoff is the default DelayFunc.
	Backoff = backoff
)
