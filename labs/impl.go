package labs

import (
	"context"
	"sync"
)

// Locker is what a lab needs from a lock: the method set every locklab lock
// shares. TryLock reports contention as (false, nil).
type Locker interface {
	Lock(ctx context.Context) error
	TryLock(ctx context.Context) (bool, error)
	Unlock(ctx context.Context) error
}

// A Locker may also have a random owner token or a fencing token; the
// harness puts them on the timeline.
type (
	tokener interface{ Token() string }
	fencer  interface{ Fence() uint64 }
)

// Impl is a named recipe for a client's [Locker]. It is registered by name
// so a child process, running the same test binary, builds the same lock.
type Impl struct {
	Name string
	New  func(e *Env) Locker
}

// OpFunc is a lab-specific operation run by a client (see [RegisterOp]):
// it gets the client's [Local] and an argument, and returns a result.
type OpFunc func(ctx context.Context, l *Local, arg string) (string, error)

var (
	regMu sync.Mutex // protects impls and ops
	impls = map[string]*Impl{}
	ops   = map[string]OpFunc{}
)

// Register records a recipe under name and returns it. Call it from a
// package-level var so the recipe exists in child processes too. It panics
// if name is taken: that is a programming error in a lab.
func Register(name string, fn func(e *Env) Locker) *Impl {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := impls[name]; dup {
		panic("labs: Register(" + name + ") called twice")
	}
	impl := &Impl{Name: name, New: fn}
	impls[name] = impl
	return impl
}

// RegisterOp records a lab-specific operation, run by [Client.Do] in
// whichever process hosts the client. It panics if name is taken or is a
// built-in operation.
func RegisterOp(name string, fn OpFunc) string {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := ops[name]; dup || builtinOps[name] {
		panic("labs: RegisterOp(" + name + ") called twice or shadows a built-in")
	}
	ops[name] = fn
	return name
}

func lookupImpl(name string) (*Impl, bool) {
	regMu.Lock()
	defer regMu.Unlock()
	i, ok := impls[name]
	return i, ok
}

func lookupOp(name string) (OpFunc, bool) {
	regMu.Lock()
	defer regMu.Unlock()
	f, ok := ops[name]
	return f, ok
}
