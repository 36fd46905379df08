package lab07

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/token"
	"github.com/locklab/locklab/labs"
)

// ErrNotHeld is returned by [Exercise.Unlock] when the key no longer holds
// this lock's token.
var ErrNotHeld = errors.New("lab07: lock not held")

// Exercise is the order service's lock as labs 01 to 04 left it: SET NX PX
// with a random token, released by an owner-checked script. On one Redis
// server it is right. Here the server has replicas, and a failover may
// promote one that never saw the SET. Run `make exercise LAB=07`: it fails
// until a SET that no replica acknowledged no longer counts as a lock.
type Exercise struct {
	client *redis.Client
	key    string
	ttl    time.Duration
	token  string // our value in the key while we hold the lock
}

// NewExercise returns the lock for key on client, with a lease of ttl.
func NewExercise(client *redis.Client, key string, ttl time.Duration) *Exercise {
	return &Exercise{client: client, key: key, ttl: ttl}
}

// TryLock takes the lock if the key is free and reports whether it did.
func (m *Exercise) TryLock(ctx context.Context) (bool, error) {
	tok := token.New()
	conn := m.client.Conn() // one connection, for the SET and whatever must follow it
	defer conn.Close()
	ok, err := labs.TakeKey(ctx, conn, m.key, tok, m.ttl)
	if err != nil || !ok {
		return false, err
	}
	// Your code here (Lab 07): the primary has the key. Does a replica?
	m.token = tok
	return true, nil
}

// Lock retries TryLock every 5ms until it succeeds, fails, or ctx ends.
func (m *Exercise) Lock(ctx context.Context) error { return labs.PollLock(ctx, m.TryLock) }

// Unlock deletes the key if it still holds our token.
func (m *Exercise) Unlock(ctx context.Context) error {
	deleted, err := m.release(ctx, m.token)
	if err != nil {
		return err
	}
	m.token = ""
	if !deleted {
		return ErrNotHeld
	}
	return nil
}

// Token returns our value in the key while we hold the lock, or "".
func (m *Exercise) Token() string { return m.token }

// release deletes the key if it holds tok, in one step, and reports
// whether it did.
func (m *Exercise) release(ctx context.Context, tok string) (bool, error) {
	n, err := m.client.Eval(ctx, `if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`,
		[]string{m.key}, tok).Int()
	return n == 1, err
}
