package reentrant

import "github.com/redis/go-redis/v9"

// Scripts lists every script of the package, for the test that loads them.
var Scripts = map[string]*redis.Script{
	"acquire.lua": acquireScript,
	"release.lua": releaseScript,
	"extend.lua":  extendScript,
	"count.lua":   countScript,
	"cancel.lua":  cancelScript,
}
