package main

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/reentrant"
)

// reentrant: counted reentrancy in a Redis hash, with its defaults and the
// common TTL. Each contending client is one Owner, carried in the context
// of every call; the bench never re-enters, so each hold has count 1.
func init() {
	register(&impl{name: "reentrant", nodes: 1, connect: connectReentrant, gaveUp: gaveUpOn(reentrant.ErrNotObtained)})
}

func connectReentrant(e env) (contender, error) {
	owner := reentrant.NewOwner()
	return e.oneServer(func(c *redis.Client, key string) locker {
		return &reentrantLocker{m: reentrant.New(c, key, reentrant.WithTTL(e.ttl)), owner: owner}
	}), nil
}

type reentrantLocker struct {
	m     *reentrant.Mutex
	owner reentrant.Owner
}

func (l *reentrantLocker) Lock(ctx context.Context) error {
	return l.m.Lock(reentrant.WithOwner(ctx, l.owner))
}

func (l *reentrantLocker) Unlock(ctx context.Context) error {
	return l.m.Unlock(reentrant.WithOwner(ctx, l.owner))
}
