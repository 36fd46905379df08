package lab02

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/token"
	"github.com/locklab/locklab/naive"
)

// ErrNotHeld is returned by Unlock when the key no longer holds this
// lock's token.
var ErrNotHeld = errors.New("lab02: lock not held")

// Exercise is the checkout service's lock, as first written: GET the key
// to see whether it is free, and if it is, SET it. Run
// `make exercise LAB=02`: it fails until two clients can no longer both
// find the key free and both take it.
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
	// Your code here (Lab 02): check that the key is free and take it in
	// ONE command, so nobody can slip in between the check and the set.
	err := m.client.Get(ctx, m.key).Err()
	if err == nil {
		return false, nil // the key exists: someone holds the lock
	}
	if !errors.Is(err, redis.Nil) {
		return false, err
	}
	m.hook(ctx, naive.HookAfterGetEmpty) // the key looked free; the lab parks the client here
	tok := token.New()
	if err := m.client.Set(ctx, m.key, tok, m.ttl).Err(); err != nil {
		return false, err
	}
	m.token = tok
	return true, nil
}

// Lock retries TryLock every 5ms until it succeeds or ctx ends.
func (m *Exercise) Lock(ctx context.Context) error {
	for {
		ok, err := m.TryLock(ctx)
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Unlock deletes the key if it still holds our token, in one step.
func (m *Exercise) Unlock(ctx context.Context) error {
	tok := m.token
	m.token = ""
	n, err := m.client.Eval(ctx, `if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`,
		[]string{m.key}, tok).Int()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}
