package correct

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

// The scripts that check ownership. Each is a Lua file in this directory,
// embedded at build time so it can be read (and loaded into redis-cli) as
// Lua; its header names KEYS, ARGV and the return values.
//
// They run through [redis.Script.Run]: EVALSHA with the script's SHA-1, and
// EVAL with the full source only when the server answers NOSCRIPT (after a
// restart, a failover or SCRIPT FLUSH), after which the server has cached
// it again.
//
// Acquiring needs no script: SET key token NX PX ttl is one atomic command,
// and joining the wait queue is one RPUSH.
var (
	//go:embed release.lua
	releaseLua string
	// releaseScript deletes the key if it holds our token (compare-and-delete),
	// or hands it to the oldest live waiter in the lock's queue.
	releaseScript = redis.NewScript(releaseLua)

	//go:embed extend.lua
	extendLua string
	// extendScript resets the key's TTL if it holds our token.
	extendScript = redis.NewScript(extendLua)

	//go:embed queued.lua
	queuedLua string
	// queuedScript is a queued waiter's own check of the lock (see
	// waitInQueue): already handed to us, free to take, or still held.
	queuedScript = redis.NewScript(queuedLua)

	//go:embed ttl.lua
	ttlLua string
	// ttlScript reads the key's TTL if it holds our token.
	ttlScript = redis.NewScript(ttlLua)
)
