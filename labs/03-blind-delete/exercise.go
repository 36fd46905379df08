package lab03

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
var ErrNotHeld = errors.New("lab03: lock not held")

// Exercise is the order service's lock: taken correctly with one
// SET NX PX, released the way most first versions do it, with DEL. Run
// `make exercise LAB=03`: it fails until a holder whose lease ran out can
// no longer delete the next holder's lock.
type Exercise struct {
	client *redis.Client
	key    string
	ttl    time.Duration
	hook   func(ctx context.Context, point string) // the lab can park the client here
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

// Unlock releases the lock.
func (m *Exercise) Unlock(ctx context.Context) error {
	tok := m.token
	if tok == "" {
		return ErrNotHeld
	}
	m.token = ""
	m.hook(ctx, naive.HookBeforeDel)
	// Your code here (Lab 03): delete the key only if it still holds tok,
	// and return ErrNotHeld if it does not. The key may have expired and
	// been taken by someone else while we were away.
	return m.client.Del(ctx, m.key).Err()
}
