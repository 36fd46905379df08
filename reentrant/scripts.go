package reentrant

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed acquire.lua
	acquireLua string
	//go:embed release.lua
	releaseLua string
	//go:embed extend.lua
	extendLua string
	//go:embed count.lua
	countLua string
	//go:embed cancel.lua
	cancelLua string

	// acquireScript takes the lock or increments this owner's count.
	acquireScript = redis.NewScript(acquireLua)
	// releaseScript decrements this owner's count and deletes the key at 0.
	releaseScript = redis.NewScript(releaseLua)
	// extendScript renews the TTL if this owner holds the lock.
	extendScript = redis.NewScript(extendLua)
	// countScript reads this owner's count.
	countScript = redis.NewScript(countLua)
	// cancelScript undoes an acquire whose reply never came.
	cancelScript = redis.NewScript(cancelLua)
)
