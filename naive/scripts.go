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

var (
	//go:embed counted_acquire.lua
	countedAcquireLua string
	//go:embed counted_release.lua
	countedReleaseLua string

	// countedAcquire and countedRelease are [Counted]'s scripts: right
	// once, wrong when run twice.
	countedAcquire = redis.NewScript(countedAcquireLua)
	countedRelease = redis.NewScript(countedReleaseLua)
)
