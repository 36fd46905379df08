package redlock

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

// The scripts run on each node separately, through [redis.Script.Run]
// (EVALSHA, falling back to EVAL when the node answers NOSCRIPT, as a node
// restarted without data does).
var (
	//go:embed release.lua
	releaseLua string
	// releaseScript deletes the key if it still holds our token.
	releaseScript = redis.NewScript(releaseLua)

	//go:embed extend.lua
	extendLua string
	// extendScript resets the key's TTL if it still holds our token.
	extendScript = redis.NewScript(extendLua)
)
