// Package lab06 holds the exercise of lab 06 (reentrancy): the order
// service's first reentrant lock.
package lab06

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/labs"
	"github.com/locklab/locklab/reentrant"
)

// ErrNotHeld is returned by Unlock when the owner in the context does not
// hold the lock.
var ErrNotHeld = errors.New("lab06: lock not held")

// Client is the part of a go-redis client the exercise uses: scripts.
// *redis.Client satisfies it.
type Client interface {
	redis.Scripter
}

// Your code here (Lab 06): the key remembers WHO holds the lock, but not
// HOW MANY TIMES. Make the two scripts below count: each acquire by the
// owner adds one, each release takes one away, and only the release that
// brings the count to zero frees the lock.

// acquireScript takes the lock for an owner, or takes it again if that
// owner holds it already.
//
//	KEYS[1]  the lock key
//	ARGV[1]  the owner id
//	ARGV[2]  the lease, in milliseconds
//
// It returns 1 when the owner holds the lock (the lease is renewed), 0 when
// another owner does (nothing is changed).
var acquireScript = redis.NewScript(`
local holder = redis.call("GET", KEYS[1])
if holder == false or holder == ARGV[1] then
	redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
	return 1
end
return 0`)

// releaseScript gives the lock back for an owner.
//
//	KEYS[1]  the lock key
//	ARGV[1]  the owner id
//	ARGV[2]  the lease, in milliseconds
//
// It returns 1 when it released the lock, 0 when the owner does not hold
// it (nothing is changed).
var releaseScript = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
	redis.call("DEL", KEYS[1])
	return 1
end
return 0`)

// Exercise is a reentrant lock on one Redis key: the owner of each call is
// the reentrant.Owner carried by its context, and a Lock by the owner that
// holds the lock goes through at once. Run `make exercise LAB=06`: it
// fails until an inner Unlock no longer frees the lock its caller still
// holds.
type Exercise struct {
	client Client
	key    string
	ttl    time.Duration
}

// NewExercise returns the lock for key on client with a lease of ttl.
func NewExercise(client Client, key string, ttl time.Duration) *Exercise {
	return &Exercise{client: client, key: key, ttl: ttl}
}

// TryLock takes the lock for the owner in ctx, or takes it again if that
// owner holds it already, and reports whether it did.
func (m *Exercise) TryLock(ctx context.Context) (bool, error) {
	owner, err := ownerOf(ctx)
	if err != nil {
		return false, err
	}
	n, err := acquireScript.Run(ctx, m.client, []string{m.key}, string(owner), m.ttl.Milliseconds()).Int()
	if err != nil {
		return false, err
	}
	return n > 0, nil
}

// Lock retries TryLock every 5ms until it succeeds or ctx ends.
func (m *Exercise) Lock(ctx context.Context) error { return labs.PollLock(ctx, m.TryLock) }

// Unlock gives the lock back for the owner in ctx. It returns ErrNotHeld,
// changing nothing, if that owner does not hold the lock.
func (m *Exercise) Unlock(ctx context.Context) error {
	owner, err := ownerOf(ctx)
	if err != nil {
		return err
	}
	n, err := releaseScript.Run(ctx, m.client, []string{m.key}, string(owner), m.ttl.Milliseconds()).Int()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}

// ownerOf returns the owner carried by ctx.
func ownerOf(ctx context.Context) (reentrant.Owner, error) {
	owner, ok := reentrant.OwnerFrom(ctx)
	if !ok || owner == "" {
		return "", fmt.Errorf("lab06: no owner in the context (use reentrant.WithOwner)")
	}
	return owner, nil
}
