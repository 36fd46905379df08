package naive

import (
	"context"
	"fmt"
)

// HookBeforeDel fires in [BlindDelete] right before Unlock's DEL.
const HookBeforeDel = "before-del"

// BlindDelete is a lock taken correctly (SET NX PX) but released with a
// plain DEL:
//
//	A: SET lock:order a NX PX 8000 -> OK
//	A: ...work outlives the lease; lock:order expires
//	B: SET lock:order b NX PX 8000 -> OK, B enters
//	A: DEL lock:order              <- deletes B's lock
//	C: SET lock:order c NX PX 8000 -> OK, C enters beside B
//
// The mistake: DEL does not check who holds the key. Release must delete
// only the holder's own token, checked and deleted atomically (a Lua
// script), as package correct does.
//
// Use [NewBlindDelete]; a BlindDelete must not be copied after first use.
type BlindDelete struct{ lock }

// NewBlindDelete returns the lock for key on client.
func NewBlindDelete(client Client, key string, opts ...Option) *BlindDelete {
	m := &BlindDelete{}
	m.init(client, key, opts)
	return m
}

// TryLock takes the lock with SET NX PX.
func (m *BlindDelete) TryLock(ctx context.Context) (bool, error) {
	if m.err != nil {
		return false, m.err
	}
	return m.setNXPX(ctx)
}

// Lock polls TryLock until it takes the lock or ctx ends.
func (m *BlindDelete) Lock(ctx context.Context) error {
	if m.err != nil {
		return m.err
	}
	return m.poll(ctx, m.TryLock)
}

// Unlock deletes the key, whoever holds it now.
func (m *BlindDelete) Unlock(ctx context.Context) error {
	if m.err != nil {
		return m.err
	}
	if m.take() == "" {
		return ErrNotHeld
	}
	m.hook(ctx, HookBeforeDel)
	if err := m.client.Del(ctx, m.key).Err(); err != nil { // no owner check
		return fmt.Errorf("naive: del %q: %w", m.key, err)
	}
	return nil
}
