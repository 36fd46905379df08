package lab10

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/correct"
	"github.com/locklab/locklab/internal/token"
	"github.com/locklab/locklab/labs"
)

// Exercise is a lock that waits for its holder's release message instead of
// polling. As shipped it loses wake-ups: run `make exercise LAB=10` (red),
// then fix Lock until it is green. Keep the hook call after a refused try:
// the lab parks the client there.
type Exercise struct {
	client *redis.Client
	key    string
	ttl    time.Duration
	hook   func(context.Context, string)

	mu    sync.Mutex // protects token
	token string
}

// NewExercise returns the lock for key on client with a lease of ttl.
func NewExercise(client *redis.Client, key string, ttl time.Duration, hook func(context.Context, string)) *Exercise {
	return &Exercise{client: client, key: key, ttl: ttl, hook: hook}
}

// Lock waits for the lock until it is ours or ctx ends.
func (m *Exercise) Lock(ctx context.Context) error {
	// Your code here (Lab 10): a release published while this loop is
	// between its refused try and its SUBSCRIBE is lost, and the waiter
	// sleeps until ctx ends.
	for {
		ok, err := m.TryLock(ctx)
		if err != nil || ok {
			return err
		}
		m.hook(ctx, correct.HookRefused) // the lab parks the client here
		sub := m.client.Subscribe(ctx, m.key+":released")
		_, err = sub.ReceiveMessage(ctx)
		sub.Close()
		if err != nil {
			return errors.Join(ErrNotObtained, ctx.Err())
		}
	}
}

// TryLock takes the lock with SET NX PX if it is free.
func (m *Exercise) TryLock(ctx context.Context) (bool, error) {
	tok := token.New()
	ok, err := labs.TakeKey(ctx, m.client, m.key, tok, m.ttl)
	if err != nil || !ok {
		return false, err
	}
	m.mu.Lock()
	m.token = tok
	m.mu.Unlock()
	return true, nil
}

// Unlock deletes the lock if it is ours and tells the waiters, in one
// script.
func (m *Exercise) Unlock(ctx context.Context) error {
	m.mu.Lock()
	tok := m.token
	m.token = ""
	m.mu.Unlock()
	if tok == "" {
		return ErrNotHeld
	}
	n, err := m.client.Eval(context.WithoutCancel(ctx), `
if redis.call("GET", KEYS[1]) == ARGV[1] then
	redis.call("DEL", KEYS[1])
	redis.call("PUBLISH", KEYS[1] .. ":released", "1")
	return 1
end
return 0`, []string{m.key}, tok).Int()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}
