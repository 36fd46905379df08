package redlock

import "github.com/redis/go-redis/v9"

// Exported for package redlock_test only.
var (
	Validity           = validity
	Drift              = drift
	DefaultNodeTimeout = defaultNodeTimeout
	Scripts            = map[string]*redis.Script{"release": releaseScript, "extend": extendScript}
)
