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
// TryLock is SET NX PX; Unlock is the GET, then the DEL.
//
// Use [NewGetThenDelete]; a GetThenDelete must not be copied after first
// use.
type GetThenDelete struct{ lock }

// NewGetThenDelete returns the lock for key on client.
func NewGetThenDelete(client Client, key string, opts ...Option) *GetThenDelete {
	m := &GetThenDelete{}
	m.init(client, key, opts, steps{tryLock: m.setNXPX, unlock: m.getThenDel})
	return m
}

// getThenDel is Unlock: it deletes the key if GET shows our token, in two
// commands.
func (m *GetThenDelete) getThenDel(ctx context.Context) error {
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
