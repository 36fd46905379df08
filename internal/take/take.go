// Package take is the acquisition the Redis locks on a string key share
// (correct, watchdog, and each node of redlock's SET round): take.lua, SET key token NX PX ttl as a script that
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
	"fmt"

	"github.com/redis/go-redis/v9"
)

// What take.lua answers, as Run returns it.
const (
	Released = 0  // the token was released already: a run landing late, which takes nothing
	Set      = 1  // the key now holds the token, set by this run
	Ours     = 2  // the key already held the token: the script ran twice (a reply lost)
	Taken    = -1 // the key holds another token (Run returns it): someone holds the lock
)

var (
	//go:embed take.lua
	Src string
	// Script is take.lua.
	Script = redis.NewScript(Src)
)

// Run runs take.lua on c for key and tok, whose receipt key is receipt
// (keyslot.Receipt), with a TTL of ttlMS milliseconds. It returns Set,
// Ours or Released; or Taken and the token the key holds.
func Run(ctx context.Context, c redis.Scripter, key, receipt, tok string, ttlMS any) (code int64, holder string, err error) {
	v, err := Script.Run(ctx, c, []string{key, receipt}, tok, ttlMS).Result()
	switch v := v.(type) {
	case int64:
		return v, "", err
	case string:
		return Taken, v, err
	}
	if err == nil {
		err = fmt.Errorf("take.lua on %q answered %T %v", key, v, v)
	}
	return Released, "", err
}

// Held reports whether code says the key holds the token: Set or Ours.
func Held(code int64) bool { return code == Set || code == Ours }
