package main

import (
	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/fencing"
)

// fencing: a lock whose every acquisition mints a token from a counter key
// kept for good (so its runs leave one counter per lock name behind, by
// design), with its defaults and the common TTL.
func init() {
	register(&impl{name: "fencing", nodes: 1, connect: connectFencing, keepsKeys: true, gaveUp: gaveUpOn(fencing.ErrNotObtained)})
}

func connectFencing(e env) (contender, error) {
	return e.oneServer(func(c *redis.Client, key string) locker { return fencing.New(c, key, fencing.WithTTL(e.ttl)) }), nil
}
