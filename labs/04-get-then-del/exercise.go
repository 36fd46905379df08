package lab04

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/token"
	"github.com/locklab/locklab/labs"
	"github.com/locklab/locklab/naive"
)

// ErrNotHeld is returned by Unlock when this lock does not hold the key:
// it never took it, already released it, or its lease ran out.
var ErrNotHeld = errors.New("lab04: lock not held")

// Exercise is the order service's lock as the payments team runs it. Their
// Redis refuses Lua scripts (the security review turned scripting off:
// EVAL and EVALSHA answer NOPERM), so lab 03's release script is not an
// option, and Unlock reads the key and deletes it only if it holds our
// token. Run `make exercise LAB=04`: it fails until the check and the
// delete can no longer be split, with no script.
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

// Token returns the value this lock wrote into the key, or "" when it does
// not hold the lock.
func (m *Exercise) Token() string { return m.token }

// TryLock takes the lock if the key is free and reports whether it did.
func (m *Exercise) TryLock(ctx context.Context) (bool, error) {
	tok := token.New()
	ok, err := labs.TakeKey(ctx, m.client, m.key, tok, m.ttl)
	if err != nil || !ok {
		return false, err
	}
	m.token = tok
	return true, nil
}

// Lock retries TryLock every 5ms until it succeeds or ctx ends.
func (m *Exercise) Lock(ctx context.Context) error { return labs.PollLock(ctx, m.TryLock) }

// Unlock deletes the key if it still holds our token.
func (m *Exercise) Unlock(ctx context.Context) error {
	tok := m.token
	if tok == "" {
		return ErrNotHeld
	}
	m.token = ""
	// Your code here (Lab 04): check the token and delete the key in ONE
	// step that nobody can get in between, without a Lua script.
	got, err := m.client.Get(ctx, m.key).Result()
	if errors.Is(err, redis.Nil) || (err == nil && got != tok) {
		return ErrNotHeld // expired, or someone else's lock now
	}
	if err != nil {
		return err
	}
	m.hook(ctx, naive.HookAfterGetMatch) // the lab parks the client here: keep this call just before the delete
	return m.client.Del(ctx, m.key).Err()
}
