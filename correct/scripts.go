package correct

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

// The scripts. Each is a Lua file in this directory, embedded at build time
// so it can be read (and loaded into redis-cli) as Lua; its header names
// KEYS, ARGV, the return values, and what a second run does (a reply can be
// lost and the client send the command again).
//
// They run through [redis.Script.Run]: EVALSHA with the script's SHA-1, and
// EVAL with the full source only when the server answers NOSCRIPT (after a
// restart, a failover or SCRIPT FLUSH), after which the server has cached
// it again.
//
// Acquiring is a script too, internal/take's take.lua, not SET key token
// NX PX ttl: its answer says whether a refusal met our own token (the
// command sent a second time, its first reply lost), and it takes nothing
// for a token that was released already, where a SET NX held up in the
// network until after its caller gave up re-created the key for a TTL, for
// nobody.
var (
	// handoffLua is the hand-off step release.lua, enqueue.lua and
	// queued.lua share, and the waiter's claim of the last two; it is put
	// in front of each of them.
	//go:embed handoff.lua
	handoffLua string

	//go:embed release.lua
	releaseLua string
	// releaseScript deletes the key if it holds our token (compare-and-delete),
	// or hands it to the oldest live waiter in the lock's queue.
	releaseScript = redis.NewScript(handoffLua + releaseLua)

	//go:embed enqueue.lua
	enqueueLua string
	// enqueueScript joins the wait queue, or takes a free lock.
	enqueueScript = redis.NewScript(handoffLua + enqueueLua)

	//go:embed queued.lua
	queuedLua string
	// queuedScript is a queued waiter's own look at the lock: already
	// handed to us, free to take, still held, or passed us by.
	queuedScript = redis.NewScript(handoffLua + queuedLua)

	//go:embed extend.lua
	extendLua string
	// extendScript resets the key's TTL if it holds our token.
	extendScript = redis.NewScript(extendLua)

	//go:embed ttl.lua
	ttlLua string
	// ttlScript reads the key's TTL if it holds our token.
	ttlScript = redis.NewScript(ttlLua)
)
