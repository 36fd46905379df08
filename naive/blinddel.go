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
// TryLock is SET NX PX; Unlock is the plain DEL.
//
// Use [NewBlindDelete]; a BlindDelete must not be copied after first use.
type BlindDelete struct{ lock }

// NewBlindDelete returns the lock for key on client.
func NewBlindDelete(client Client, key string, opts ...Option) *BlindDelete {
	m := &BlindDelete{}
	m.init(client, key, opts, steps{tryLock: m.setNXPX, unlock: m.blindDel})
	return m
}

// blindDel is Unlock: it deletes the key, whoever holds it now.
func (m *BlindDelete) blindDel(ctx context.Context) error {
	if m.take() == "" {
		return ErrNotHeld
	}
	m.hook(ctx, HookBeforeDel)
	if err := m.client.Del(ctx, m.key).Err(); err != nil { // no owner check
		return fmt.Errorf("naive: del %q: %w", m.key, err)
	}
	return nil
}
