package lab01

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/token"
	"github.com/locklab/locklab/labs"
	"github.com/locklab/locklab/naive"
)

// Exercise is the order service's lock, as first written: SETNX to take
// the key, then PEXPIRE to give it a lease. Run `make exercise LAB=01`: it
// fails until a crash can no longer leave the lock without a TTL.
type Exercise struct {
	client *redis.Client
	key    string
	ttl    time.Duration
	hook   func(ctx context.Context, point string) // the lab parks the client here
	token  string
}

// NewExercise returns the lock for key on client with a lease of ttl.
func NewExercise(client *redis.Client, key string, ttl time.Duration, hook func(context.Context, string)) *Exercise {
	return &Exercise{client: client, key: key, ttl: ttl, hook: hook}
}

// TryLock takes the lock if the key is free and reports whether it did.
func (m *Exercise) TryLock(ctx context.Context) (bool, error) {
	tok := token.New()
	// Your code here (Lab 01): take the key and give it its lease in ONE command.
	ok, err := m.client.SetNX(ctx, m.key, tok, 0).Result()
	if err != nil || !ok {
		return false, err
	}
	m.token = tok
	m.hook(ctx, naive.HookAfterSetNX) // the lab kills the process here
	return true, m.client.PExpire(ctx, m.key, m.ttl).Err()
}

// Lock retries TryLock every 5ms until it succeeds or ctx ends.
func (m *Exercise) Lock(ctx context.Context) error { return labs.PollLock(ctx, m.TryLock) }

// Unlock deletes the key if it still holds our token, in one step.
func (m *Exercise) Unlock(ctx context.Context) error {
	n, err := m.client.Eval(ctx, `if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`,
		[]string{m.key}, m.token).Int()
	if err != nil {
		return err
	}
	if n == 0 {
		return errors.New("lab01: lock not held")
	}
	return nil
}
