package naive

import (
	"context"
	"fmt"

	"github.com/locklab/locklab/internal/token"
)

// HookAfterSetNX fires in [SetNXThenExpire] after SETNX took the key and
// before EXPIRE gives it a TTL: a crash here leaves a lock that never
// expires.
const HookAfterSetNX = "after-setnx"

// SetNXThenExpire is a lock taken in two commands, SETNX then EXPIRE, as
// Redis before 2.6.12 forced and many tutorials still show:
//
//	SETNX lock:order token    <- the lock exists, with no TTL
//	                          <- the process dies here: kill -9, OOM, power cut
//	EXPIRE lock:order 8       <- never sent
//
// The mistake: the two commands are not atomic. A holder that dies between
// them leaves a key with no TTL (PTTL -1), and every other client waits
// forever. SET key token NX PX ttl does both in one command. (The TTL is
// set with PEXPIRE, in milliseconds, so the labs can use short TTLs; the
// mistake is the same with EXPIRE.)
//
// TryLock is the SETNX, then the EXPIRE; Unlock is the owner-checked
// script.
//
// Use [NewSetNXThenExpire]; a SetNXThenExpire must not be copied after
// first use.
type SetNXThenExpire struct{ lock }

// NewSetNXThenExpire returns the lock for key on client.
func NewSetNXThenExpire(client Client, key string, opts ...Option) *SetNXThenExpire {
	m := &SetNXThenExpire{}
	m.init(client, key, opts, steps{tryLock: m.setNXThenExpire, unlock: m.release})
	return m
}

// setNXThenExpire is TryLock: it takes the lock if the key is free, with
// SETNX, then EXPIRE.
func (m *SetNXThenExpire) setNXThenExpire(ctx context.Context) (bool, error) {
	tok := token.New()
	ok, err := m.client.SetNX(ctx, m.key, tok, 0).Result() // SETNX: no TTL yet
	if err != nil {
		return false, fmt.Errorf("naive: setnx %q: %w", m.key, err)
	}
	if !ok {
		return false, nil
	}
	m.held(tok)
	m.hook(ctx, HookAfterSetNX) // the window: the key exists and has no TTL
	if err := m.client.PExpire(ctx, m.key, m.opts.ttl).Err(); err != nil {
		return true, fmt.Errorf("naive: expire %q: %w (the lock is held with no TTL)", m.key, err)
	}
	return true, nil
}
