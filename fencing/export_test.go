package fencing

import "github.com/redis/go-redis/v9"

// Scripts lists every script of the package, for the test that loads them
// into a real server.
var Scripts = map[string]*redis.Script{
	"acquire": acquireScript,
	"release": releaseScript,
	"extend":  extendScript,
}

// Sources holds each script's source, by the names in Scripts.
var Sources = map[string]string{
	"acquire": acquireLua,
	"release": releaseLua,
	"extend":  extendLua,
}

// CounterKey exposes counterKey.
var CounterKey = counterKey
