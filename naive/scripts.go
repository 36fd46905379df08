package naive

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

//go:embed release.lua
var releaseLua string

// releaseScript is the owner-checked release the types use when their
// mistake is elsewhere; it is what [GetThenDelete] and [BlindDelete] get
// wrong.
var releaseScript = redis.NewScript(releaseLua)
