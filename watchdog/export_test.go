package watchdog

import "github.com/redis/go-redis/v9"

// Scripts lists every script of the package, for the test that loads them.
var Scripts = map[string]*redis.Script{
	"release.lua": releaseScript,
	"extend.lua":  extendScript,
}
