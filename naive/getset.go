package naive

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/token"
)

// HookAfterGetEmpty fires in [GetThenSet] after GET found the key empty
// and before SET takes it: another client can see it empty too.
const HookAfterGetEmpty = "after-get-empty"

// GetThenSet is a lock taken by checking, then setting:
//
//	GET lock:order            -> (nil), A thinks it is free
//	                          <- B: GET lock:order -> (nil) too
//	SET lock:order a PX ttl   <- A takes it
//	                          <- B: SET lock:order b PX ttl, overwriting A's
//
// The mistake: check-then-act in two commands. Both clients saw the key
// empty, both SET it, both enter. SET with NX makes the check and the set
// one atomic step on the server.
//
// TryLock is the GET, then the SET; Unlock is the owner-checked script.
//
// Use [NewGetThenSet]; a GetThenSet must not be copied after first use.
type GetThenSet struct{ lock }

// NewGetThenSet returns the lock for key on client.
func NewGetThenSet(client Client, key string, opts ...Option) *GetThenSet {
	m := &GetThenSet{}
	m.init(client, key, opts, steps{tryLock: m.getThenSet, unlock: m.release})
	return m
}

// getThenSet is TryLock: it takes the lock if GET finds the key empty.
func (m *GetThenSet) getThenSet(ctx context.Context) (bool, error) {
	err := m.client.Get(ctx, m.key).Err()
	if err == nil {
		return false, nil // someone holds it
	}
	if !errors.Is(err, redis.Nil) {
		return false, fmt.Errorf("naive: get %q: %w", m.key, err)
	}
	m.hook(ctx, HookAfterGetEmpty) // the window: another client may GET now
	tok := token.New()
	if err := m.client.SetArgs(ctx, m.key, tok, redis.SetArgs{TTL: m.opts.ttl}).Err(); err != nil { // no NX
		return false, fmt.Errorf("naive: set %q: %w", m.key, err)
	}
	m.held(tok)
	return true, nil
}
