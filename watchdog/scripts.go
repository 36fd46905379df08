package watchdog

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed release.lua
	releaseLua string
	//go:embed extend.lua
	extendLua string

	// releaseScript deletes the key if it still holds our token.
	releaseScript = redis.NewScript(releaseLua)
	// extendScript renews the key's TTL if it still holds our token.
	extendScript = redis.NewScript(extendLua)
)
