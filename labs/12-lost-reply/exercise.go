// Package lab12 holds the exercise of lab 12 (a lost reply): the order
// service's reentrant lock from lab 06, behind a client that retries.
package lab12

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
var ErrNotHeld = errors.New("lab12: lock not held")

// Client is the part of a go-redis client the exercise uses: scripts and,
// if you need them, plain commands. *redis.Client satisfies it.
type Client interface {
	redis.Scripter
	redis.Cmdable
}

// Your code here (Lab 12): the scripts below are right, and lab 06's test
// passes them; they are wrong the second time they run. go-redis, on its
// default options, sends a command again when its reply is lost. Make
// every call of TryLock and Unlock safe to run twice: a second run of the
// same call must change nothing and answer what the first run answered.

// acquireScript takes the lock for an owner, or takes it once more if that
// owner holds it already.
//
//	KEYS[1]  the lock key: a hash, owner id -> count
//	ARGV[1]  the owner id
//	ARGV[2]  the lease, in milliseconds
//
// It returns 1 when the owner holds the lock (the lease is renewed), 0 when
// another owner does (nothing is changed).
var acquireScript = redis.NewScript(`
if redis.call("EXISTS", KEYS[1]) == 0 or redis.call("HEXISTS", KEYS[1], ARGV[1]) == 1 then
	redis.call("HINCRBY", KEYS[1], ARGV[1], 1)
	redis.call("PEXPIRE", KEYS[1], ARGV[2])
	return 1
end
return 0`)

// releaseScript takes one of the owner's holds back, and deletes the key
// when the count reaches zero.
//
//	KEYS[1]  the lock key
//	ARGV[1]  the owner id
//	ARGV[2]  the lease, in milliseconds
//
// It returns 1 when it took a hold back, 0 when the owner holds none
// (nothing is changed).
var releaseScript = redis.NewScript(`
if redis.call("HEXISTS", KEYS[1], ARGV[1]) == 0 then
	return 0
end
if redis.call("HINCRBY", KEYS[1], ARGV[1], -1) > 0 then
	redis.call("PEXPIRE", KEYS[1], ARGV[2])
else
	redis.call("DEL", KEYS[1])
end
return 1`)

// Exercise is a counted, reentrant lock on one Redis key: the owner of
// each call is the reentrant.Owner carried by its context. Run `make
// exercise LAB=12`: it fails until a call whose reply is lost, and which
// go-redis therefore sends again, counts once.
type Exercise struct {
	client Client
	key    string
	ttl    time.Duration
}

// NewExercise returns the lock for key on client with a lease of ttl.
func NewExercise(client Client, key string, ttl time.Duration) *Exercise {
	return &Exercise{client: client, key: key, ttl: ttl}
}

// TryLock takes the lock for the owner in ctx, or takes it once more if
// that owner holds it already, and reports whether it did.
func (m *Exercise) TryLock(ctx context.Context) (bool, error) {
	n, err := m.call(ctx, acquireScript)
	if err != nil {
		return false, err
	}
	return n > 0, nil
}

// Lock retries TryLock every 5ms until it succeeds or ctx ends.
func (m *Exercise) Lock(ctx context.Context) error { return labs.PollLock(ctx, m.TryLock) }

// Unlock takes back one hold of the owner in ctx. It returns ErrNotHeld,
// changing nothing, if that owner holds none.
func (m *Exercise) Unlock(ctx context.Context) error {
	n, err := m.call(ctx, releaseScript)
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}

// call runs script once for the owner in ctx: one call of TryLock or
// Unlock, which go-redis may send more than once.
func (m *Exercise) call(ctx context.Context, script *redis.Script) (int, error) {
	owner, ok := reentrant.OwnerFrom(ctx)
	if !ok || owner == "" {
		return 0, fmt.Errorf("lab12: no owner in the context (use reentrant.WithOwner)")
	}
	return script.Run(ctx, m.client, []string{m.key}, string(owner), m.ttl.Milliseconds()).Int()
}
