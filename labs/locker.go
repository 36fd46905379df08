package labs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/rig"
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
	regMu  sync.Mutex // protects impls, ops, errs
	impls  = map[string]*Impl{}
	ops    = map[string]OpFunc{}
	errs   []knownError
	errsMu sync.Mutex
)

type knownError struct {
	err   error
	label string
}

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

// RegisterError lets errors.Is see err through a client in another process,
// and names it on the timeline with label ("not held"). Register sentinel
// errors once, from package-level vars.
func RegisterError(err error, label string) error {
	errsMu.Lock()
	defer errsMu.Unlock()
	errs = append(errs, knownError{err, label})
	return err
}

func init() {
	RegisterError(context.Canceled, "context canceled")
	RegisterError(context.DeadlineExceeded, "deadline exceeded")
}

// labels returns the labels of the registered errors err matches.
func labels(err error) []string {
	errsMu.Lock()
	defer errsMu.Unlock()
	var out []string
	for _, k := range errs {
		if errors.Is(err, k.err) && !slices.Contains(out, k.label) {
			out = append(out, k.label)
		}
	}
	return out
}

// describeErr is an error's text on the timeline: its registered labels,
// or its message.
func describeErr(err error) string {
	if l := labels(err); len(l) > 0 {
		return strings.Join(l, ", ")
	}
	return err.Error()
}

// remoteError is an error that crossed the wire from a client. errors.Is
// matches the registered errors the original matched.
type remoteError struct {
	msg    string
	labels []string
}

func (e *remoteError) Error() string { return e.msg }

func (e *remoteError) Is(target error) bool {
	errsMu.Lock()
	defer errsMu.Unlock()
	for _, k := range errs {
		if k.err != target {
			continue
		}
		for _, l := range e.labels {
			if l == k.label {
				return true
			}
		}
	}
	return false
}

// Env is what a recipe gets to build a client's lock: where Redis is, the
// key under test, the scene's TTL and parameters, and the hook to wire into
// the lock's WithHook option.
type Env struct {
	Client string            `json:"client"`
	Addrs  []string          `json:"addrs"`
	Key    string            `json:"key"`
	TTL    time.Duration     `json:"ttl"`
	Params map[string]string `json:"params,omitempty"`

	hook func(ctx context.Context, point string)

	mu     sync.Mutex // protects conns and defers
	conns  map[int]*redis.Client
	defers []func()
}

// Redis returns the client's own connection pool to node i, made on first
// use and closed when the client stops.
func (e *Env) Redis(i int) *redis.Client {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.conns == nil {
		e.conns = map[int]*redis.Client{}
	}
	if c, ok := e.conns[i]; ok {
		return c
	}
	if i < 0 || i >= len(e.Addrs) {
		panic(fmt.Sprintf("labs: Env.Redis(%d) but the scene has %d nodes", i, len(e.Addrs)))
	}
	c := redis.NewClient(rig.ClientOptions(e.Addrs[i]))
	e.conns[i] = c
	return c
}

// RedisAll returns the client's connection pools to every node, in order.
func (e *Env) RedisAll() []*redis.Client {
	out := make([]*redis.Client, len(e.Addrs))
	for i := range e.Addrs {
		out[i] = e.Redis(i)
	}
	return out
}

// Hook is the step controller's hook; pass it to a lock's WithHook option.
// It parks the client when the scenario armed point with [Client.ParkAt].
func (e *Env) Hook(ctx context.Context, point string) {
	if e.hook != nil {
		e.hook(ctx, point)
	}
}

// Param returns the scene parameter name, or def when it is not set.
func (e *Env) Param(name, def string) string {
	if v, ok := e.Params[name]; ok {
		return v
	}
	return def
}

// Defer registers fn to run when the client stops, before its Redis
// connections close (last registered, first run): a recipe that starts
// something with a lifetime (a Notifier, a subscription) stops it here.
func (e *Env) Defer(fn func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.defers = append(e.defers, fn)
}

func (e *Env) close() {
	e.mu.Lock()
	defers := e.defers
	e.defers = nil
	e.mu.Unlock()
	for i := len(defers) - 1; i >= 0; i-- {
		defers[i]()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, c := range e.conns {
		_ = c.Close()
	}
	e.conns = nil
}
