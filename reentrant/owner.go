package reentrant

import (
	"context"

	"github.com/locklab/locklab/internal/token"
)

// Owner identifies who holds a lock: one logical call path, which may
// cross goroutines and, by passing the id along, services. Every Lock by
// the same Owner re-enters the lock; every other Owner waits. It is the
// hash field in Redis, as Redisson's "<client uuid>:<thread id>" is.
//
// Make one with [NewOwner] per call path (for example per request or per
// job), and carry it in the context with [WithOwner]. An Owner received
// from another service is used as is: Owner(id). Two call paths must
// never share an Owner, or they will both hold the lock at once.
type Owner string

// NewOwner returns a fresh Owner: 128 random bits (crypto/rand).
func NewOwner() Owner { return Owner(token.New()) }

// ownerKey is the context key for the Owner.
type ownerKey struct{}

// WithOwner returns a copy of ctx that carries o. Every [Mutex] method
// takes its owner from the context.
func WithOwner(ctx context.Context, o Owner) context.Context {
	return context.WithValue(ctx, ownerKey{}, o)
}

// OwnerFrom returns the Owner carried by ctx, and whether there is one.
func OwnerFrom(ctx context.Context) (Owner, bool) {
	o, ok := ctx.Value(ownerKey{}).(Owner)
	return o, ok
}

// ownerOf returns ctx's Owner, or an error wrapping ErrInvalid.
func ownerOf(ctx context.Context, method, key string) (Owner, error) {
	o, ok := OwnerFrom(ctx)
	if !ok {
		return "", invalid("%s %q: no Owner in the context (use reentrant.WithOwner)", method, key)
	}
	if o == "" {
		return "", invalid("%s %q: empty Owner in the context", method, key)
	}
	return o, nil
}
