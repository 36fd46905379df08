package fencing

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

// The scripts run through [redis.Script.Run]: EVALSHA, falling back to EVAL
// when the server answers NOSCRIPT. Each .lua file starts with its contract.
var (
	//go:embed acquire.lua
	acquireLua string
	//go:embed release.lua
	releaseLua string
	//go:embed extend.lua
	extendLua string

	// acquireScript checks the lock is free, INCRs the counter and SETs the
	// lock NX PX in one atomic step, returning the new token or 0.
	acquireScript = redis.NewScript(acquireLua)
	// releaseScript deletes the lock if the owner value still matches.
	releaseScript = redis.NewScript(releaseLua)
	// extendScript resets the lease if the owner value still matches.
	extendScript = redis.NewScript(extendLua)
)
