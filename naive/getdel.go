package naive

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// HookAfterGetMatch fires in [GetThenDelete]'s Unlock after GET returned
// our token and before DEL: the key can expire and change hands here.
const HookAfterGetMatch = "after-get-match"

// GetThenDelete is a lock that checks the owner before deleting, but in two
// commands:
//
//	A: GET lock:order -> a         A still holds it...
//	                               <- lock:order expires; B: SET NX PX -> OK
//	A: DEL lock:order              <- deletes B's lock
//
// The mistake: check-then-act again, this time on release. GET and DEL
// must be one atomic step on the server: a Lua script, as package correct
// uses.
//
// Use [NewGetThenDelete]; a GetThenDelete must not be copied after first
// use.
type GetThenDelete struct{ lock }

// NewGetThenDelete returns the lock for key on client.
func NewGetThenDelete(client Client, key string, opts ...Option) *GetThenDelete {
	m := &GetThenDelete{}
	m.init(client, key, opts)
	return m
}

// TryLock takes the lock with SET NX PX.
func (m *GetThenDelete) TryLock(ctx context.Context) (bool, error) {
	if m.err != nil {
		return false, m.err
	}
	return m.setNXPX(ctx)
}

// Lock polls TryLock until it takes the lock or ctx ends.
func (m *GetThenDelete) Lock(ctx context.Context) error {
	if m.err != nil {
		return m.err
	}
	return m.poll(ctx, m.TryLock)
}

// Unlock deletes the key if GET shows our token: two commands.
func (m *GetThenDelete) Unlock(ctx context.Context) error {
	if m.err != nil {
		return m.err
	}
	tok := m.take()
	if tok == "" {
		return ErrNotHeld
	}
	got, err := m.client.Get(ctx, m.key).Result()
	if errors.Is(err, redis.Nil) || (err == nil && got != tok) {
		return ErrNotHeld
	}
	if err != nil {
		return fmt.Errorf("naive: get %q: %w", m.key, err)
	}
	m.hook(ctx, HookAfterGetMatch) // the window: the key may change hands now
	if err := m.client.Del(ctx, m.key).Err(); err != nil {
		return fmt.Errorf("naive: del %q: %w", m.key, err)
	}
	return nil
}
