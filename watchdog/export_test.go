package watchdog

import (
	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/take"
)

// Scripts lists every script the package runs, for the test that loads them.
var Scripts = map[string]*redis.Script{
	"take.lua":    take.Script,
	"release.lua": releaseScript,
	"extend.lua":  extendScript,
}
