package labs

import (
	"context"

	"github.com/locklab/locklab/reentrant"
)

// CallPath is one client's lock, for the locks that take their owner from
// the context (package reentrant, and exercises like it). Each client
// stands for one call path (one request), with its own reentrant.Owner
// made when the client starts. The harness's own operations (the
// scenario's Lock, TryLock, Unlock) carry no owner, so CallPath adds the
// client's to a context that has none; a lab's own operation may carry
// one on purpose. The owner is also what the lock's key records as the
// holder, so Token returns it, and the timeline names it (a1).
type CallPath struct {
	Locker
	owner reentrant.Owner
}

// NewCallPath returns l run as one call path with a fresh Owner.
func NewCallPath(l Locker) *CallPath { return &CallPath{Locker: l, owner: reentrant.NewOwner()} }

func (c *CallPath) ctx(ctx context.Context) context.Context {
	if _, ok := reentrant.OwnerFrom(ctx); ok {
		return ctx
	}
	return reentrant.WithOwner(ctx, c.owner)
}

// Lock locks as the call path.
func (c *CallPath) Lock(ctx context.Context) error { return c.Locker.Lock(c.ctx(ctx)) }

// TryLock tries once, as the call path.
func (c *CallPath) TryLock(ctx context.Context) (bool, error) { return c.Locker.TryLock(c.ctx(ctx)) }

// Unlock unlocks as the call path.
func (c *CallPath) Unlock(ctx context.Context) error { return c.Locker.Unlock(c.ctx(ctx)) }

// Token returns the call path's owner id.
func (c *CallPath) Token() string { return string(c.owner) }

// Owner returns the call path's owner.
func (c *CallPath) Owner() reentrant.Owner { return c.owner }
