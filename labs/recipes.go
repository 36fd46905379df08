package labs

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/correct"
	"github.com/locklab/locklab/naive"
	"github.com/locklab/locklab/redlock"
	"github.com/locklab/locklab/reentrant"
)

// Recipes every lab may use, registered once here so that no lab copies
// them. Each builds its lock on the client's own connections, with the
// scene's key and TTL and the step controller's hook.
var (
	// Correct is package correct's Mutex on the first node: SET NX PX
	// (in a script), owner-checked Lua release, polling with backoff.
	Correct = Register("correct", func(e *Env) Locker { return NewCorrect(e) })
	// Redlock is package redlock's Mutex on every node of the client, as
	// [NewRedlock] builds it.
	Redlock = Register("redlock", func(e *Env) Locker { return NewRedlock(e) })

	// The broken locks of package naive, one per classic mistake.
	SetNXThenExpire = Register("naive-setnx-then-expire", func(e *Env) Locker {
		return naive.NewSetNXThenExpire(e.Redis(0), e.Key, naive.WithTTL(e.TTL), naive.WithHook(e.Hook))
	})
	GetThenSet = Register("naive-get-then-set", func(e *Env) Locker {
		return naive.NewGetThenSet(e.Redis(0), e.Key, naive.WithTTL(e.TTL), naive.WithHook(e.Hook))
	})
	BlindDelete = Register("naive-blind-delete", func(e *Env) Locker {
		return naive.NewBlindDelete(e.Redis(0), e.Key, naive.WithTTL(e.TTL), naive.WithHook(e.Hook))
	})
	GetThenDelete = Register("naive-get-then-delete", func(e *Env) Locker {
		return naive.NewGetThenDelete(e.Redis(0), e.Key, naive.WithTTL(e.TTL), naive.WithHook(e.Hook))
	})
	Counted = Register("naive-counted", func(e *Env) Locker {
		return naive.NewCounted(e.Redis(0), e.Key, naive.WithTTL(e.TTL), naive.WithHook(e.Hook))
	})

	// Reentrant is package reentrant's Mutex on the first node, run as one
	// call path per client ([CallPath]): a count per owner in a Redis
	// hash, each call safe to send twice.
	Reentrant = Register("reentrant", func(e *Env) Locker {
		return NewCallPath(reentrant.New(e.Redis(0), e.Key, reentrant.WithTTL(e.TTL), reentrant.WithHook(e.Hook)))
	})
)

// OnKey returns the recipe of a lab's own lock, built by newLock on the
// client's first node with the scene's key and TTL and the step
// controller's hook: most exercises' NewExercise, and the locks a lab
// ships beside them. Pass it to [Register].
func OnKey[L Locker](newLock func(client *redis.Client, key string, ttl time.Duration, hook func(context.Context, string)) L) func(e *Env) Locker {
	return func(e *Env) Locker { return newLock(e.Redis(0), e.Key, e.TTL, e.Hook) }
}

// NewCorrect returns package correct's Mutex on the client's first node,
// with the scene's key and TTL, the step controller's hook, and opts.
func NewCorrect(e *Env, opts ...correct.Option) *correct.Mutex {
	base := []correct.Option{correct.WithTTL(e.TTL), correct.WithHook(e.Hook)}
	return correct.New(e.Redis(0), e.Key, append(base, opts...)...)
}

// NewRedlock returns package redlock's Mutex on every node of the client,
// settled ([SettledRedlock]), so that the nodes a lab shows are the same in
// every run. Its per-node timeout is half the TTL, far more generous than
// the default, so that a busy machine never makes a live node look dead;
// killed and cut-off nodes fail at once anyway.
func NewRedlock(e *Env, opts ...redlock.Option) SettledRedlock {
	clients := make([]redlock.Client, len(e.Addrs))
	for i, c := range e.RedisAll() {
		clients[i] = c
	}
	base := []redlock.Option{redlock.WithTTL(e.TTL), redlock.WithNodeTimeout(e.TTL / 2), redlock.WithHook(e.Hook)}
	return SettledRedlock{Mutex: redlock.New(clients, e.Key, append(base, opts...)...)}
}

// Operations every lab may run in its clients.
var (
	// ValidFor has a client say, in its lane, how long its lock is still
	// valid by its own clock (the lock's Until), for the locks that know.
	ValidFor = RegisterOp("valid-for", func(_ context.Context, l *Local, _ string) (string, error) {
		u, ok := l.Locker.(interface{ Until() time.Time })
		if !ok || u.Until().IsZero() {
			return "", nil
		}
		l.Note("lock valid for another %d ms", time.Until(u.Until()).Milliseconds())
		return "", nil
	})
	// Connect has a client open its connection to every node, so that its
	// first lock does not also pay for dialing them: a freshly started child
	// process on a loaded machine can take longer to dial five servers than
	// a short lock's per-node timeout, and warm connections are what a
	// long-running service has anyway. It records nothing.
	Connect = RegisterOp("connect", func(ctx context.Context, l *Local, _ string) (string, error) {
		for _, c := range l.Env.RedisAll() {
			if err := c.Ping(ctx).Err(); err != nil {
				return "", err
			}
		}
		return "", nil
	})
)

// LockedOp is one client's whole turn at the protected resource, run as
// one operation: Lock, waiting at most Wait; Op with the operation's
// argument; Unlock. In a [Race] it is the part of a client that needs no
// hook point of its own (B's turn after A's), so that exploring it costs
// no schedules. Register it with [RegisterLockedOp].
type LockedOp struct {
	Op   string        // the operation run under the lock, given the argument
	Wait time.Duration // the longest Lock waits; the op then fails
	// Lock and Holder name, in the error of a Lock that gave up, what the
	// lock is ("the row lock") and who may keep it ("A took it again?"):
	// "B could not take the row lock within 2s (A took it again?): ...".
	Lock, Holder string
}

// RegisterLockedOp registers o under name (see [RegisterOp]) and returns
// name. The operation fails if Lock does not take the lock within o.Wait,
// with an error naming o.Lock and o.Holder and wrapping Lock's, or if o.Op
// fails (the lock is then still held); otherwise it returns Unlock's
// error. Lock, Op and Unlock are each recorded on the timeline.
func RegisterLockedOp(name string, o LockedOp) string {
	return RegisterOp(name, func(ctx context.Context, l *Local, arg string) (string, error) {
		lctx, cancel := context.WithTimeout(ctx, o.Wait)
		defer cancel()
		if err := l.Lock(lctx); err != nil {
			return "", fmt.Errorf("%s could not take %s within %v (%s): %w", l.Name, o.Lock, o.Wait, o.Holder, err)
		}
		if _, err := l.Do(ctx, o.Op, arg); err != nil {
			return "", err
		}
		return "", l.Unlock(ctx)
	})
}

// Failing returns a Locker whose every method returns err: for a recipe
// that cannot build its lock (a Notifier that would not subscribe), so
// that the scenario's first call fails with the reason instead of the
// client dying.
func Failing(err error) Locker { return failing{err} }

type failing struct{ err error }

func (f failing) Lock(context.Context) error            { return f.err }
func (f failing) TryLock(context.Context) (bool, error) { return false, f.err }
func (f failing) Unlock(context.Context) error          { return f.err }
