package redlock

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

// The scripts run on each node separately, through [redis.Script.Run]
// (EVALSHA, falling back to EVAL when the node answers NOSCRIPT, as a node
// restarted without data does). Each is a Lua file in this directory whose
// header names KEYS, ARGV and the return values.
//
// A SET round acquires with a script too, internal/take's take.lua, not
// SET key token NX PX ttl: a SET that lands after its token was released
// (the client gave up on it) would take the node back for nobody; take.lua
// refuses a released token.
var (
	//go:embed release.lua
	releaseLua string
	// releaseScript deletes the key if it still holds our token, or hands
	// it to the best live waiter in the node's queue.
	releaseScript = redis.NewScript(releaseLua)

	//go:embed extend.lua
	extendLua string
	// extendScript resets the key's TTL if it still holds our token.
	extendScript = redis.NewScript(extendLua)

	//go:embed acquire.lua
	acquireLua string
	// acquireScript is one round of a waiter in the queues: take the node,
	// join its queue, or pass on a node held under a retired token.
	acquireScript = redis.NewScript(acquireLua)
)
