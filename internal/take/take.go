// Package take is the acquisition the single-key Redis locks share
// (correct, watchdog): take.lua, SET key token NX PX ttl as a script that
// says whose token a refusal met and takes nothing for a token that was
// released already.
//
// Why not SET NX: a Lock that gives up while its SET is held up in the
// network releases its token at once, owner-checked, and that release can
// land first and find nothing. The SET landing after it re-created the key
// for a whole TTL, held by nobody. Every release of these locks leaves a
// receipt for the token (its release.lua), for at least a TTL (see
// internal/retry's ReceiptFor); take.lua finds it and refuses.
package take

import (
	"context"
	_ "embed"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/keyslot"
)

// What take.lua answers.
const (
	Taken    = 0 // the key holds another token: someone holds the lock
	Set      = 1 // the key now holds the token, set by this run
	Ours     = 2 // the key already held the token: the script ran twice (a reply lost)
	Released = 3 // the token was released already: a run landing late, which takes nothing
)

var (
	//go:embed take.lua
	Src string
	// Script is take.lua.
	Script = redis.NewScript(Src)
)

// Run runs take.lua on c for key (whose keyslot.Base is base) and tok,
// with a TTL of ttlMS milliseconds, and returns its answer: Taken, Set,
// Ours or Released.
func Run(ctx context.Context, c redis.Scripter, key, base, tok string, ttlMS any) (int64, error) {
	return Script.Run(ctx, c, []string{key, keyslot.Receipt(base, tok)}, tok, ttlMS).Int64()
}

// Held reports whether code says the key holds the token: Set or Ours.
func Held(code int64) bool { return code == Set || code == Ours }
