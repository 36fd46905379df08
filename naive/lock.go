package naive

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/args"
	"github.com/locklab/locklab/internal/frame"
	"github.com/locklab/locklab/internal/retry"
	"github.com/locklab/locklab/internal/token"
)

// Client is the part of a go-redis client the naive locks use.
// *redis.Client, *redis.ClusterClient and *redis.Ring implement it.
type Client interface {
	redis.Scripter
	Get(ctx context.Context, key string) *redis.StringCmd
	SetNX(ctx context.Context, key string, value any, expiration time.Duration) *redis.BoolCmd
	SetArgs(ctx context.Context, key string, value any, a redis.SetArgs) *redis.StatusCmd
	PExpire(ctx context.Context, key string, expiration time.Duration) *redis.BoolCmd
	Del(ctx context.Context, keys ...string) *redis.IntCmd
}

// lock is what every naive type shares: the frame every locklab lock
// builds from (internal/frame: the key, the argument error New found, the
// hook), the options, the token of the current hold, and Lock, TryLock and
// Unlock wired around the two steps each type does its own way.
type lock struct {
	f      frame.Frame
	client Client
	key    string
	opts   options
	steps  steps // set once by the type's constructor

	hold token.Slot // the current hold's token
}

// steps are where the naive types differ: how TryLock takes the key and
// how Unlock gives it back. Each type's file holds its own, with its
// mistake. They are method values bound to the lock the constructor made,
// so a copy would still act on the original: one more reason a lock must
// not be copied.
type steps struct {
	// tryLock takes the key if it is free, reporting contention as
	// (false, nil).
	tryLock func(context.Context) (bool, error)
	// unlock gives the key back, returning ErrNotHeld when there is no
	// hold to give back.
	unlock func(context.Context) error
}

// init sets up the lock for key on client, with the type's steps s. The
// options are checked first, then the client and key: every method returns
// the first bad argument.
func (l *lock) init(client Client, key string, opts []Option, s steps) {
	var err error
	l.client, l.key, l.steps = client, key, s
	l.opts, err = newOptions(opts)
	if err == nil {
		err = args.Target(ErrInvalid, client, key)
	}
	l.f = frame.Frame{Kind: "naive", Key: key, Err: err, Hook: l.opts.hook}
}

// check returns the error every method returns before it sends anything:
// the invalid arguments New found, or, for a lock no New made (a zero
// value), an error wrapping ErrInvalid.
func (l *lock) check() error { return l.f.Check(ErrInvalid) }

// Key returns the lock's key.
func (l *lock) Key() string { return l.key }

// Token returns the token of the current hold, or "" when not held.
func (l *lock) Token() string { return l.hold.Get() }

func (l *lock) held(tok string) { l.hold.Set(tok) }

// take returns the current token and forgets it.
func (l *lock) take() string { return l.hold.Take() }

func (l *lock) hook(ctx context.Context, point string) { l.f.At(ctx, point) }

// TryLock takes the lock if it is free, in the way the type's doc
// describes, and reports a lock held by someone else as (false, nil).
func (l *lock) TryLock(ctx context.Context) (bool, error) {
	if err := l.check(); err != nil {
		return false, err
	}
	return l.steps.tryLock(ctx)
}

// Lock polls TryLock until it takes the lock or ctx ends.
func (l *lock) Lock(ctx context.Context) error {
	if err := l.check(); err != nil {
		return err
	}
	return l.poll(ctx, l.TryLock)
}

// Unlock releases the lock in the way the type's doc describes. It returns
// [ErrNotHeld] when the lock was not held.
func (l *lock) Unlock(ctx context.Context) error {
	if err := l.check(); err != nil {
		return err
	}
	return l.steps.unlock(ctx)
}

// poll calls try every poll interval until it takes the lock, fails, or
// ctx ends.
func (l *lock) poll(ctx context.Context, try func(context.Context) (bool, error)) error {
	fixed := retry.Policy{Delay: func(int) time.Duration { return l.opts.poll }}
	return retry.Do(ctx, fixed, ErrNotObtained, func(ctx context.Context, _ int) (bool, error) {
		ok, err := try(ctx)
		if err != nil {
			// The deadline may have cut a command short (go-redis reports
			// an i/o timeout): then the context ended the wait, not Redis.
			err = retry.Failed(ctx, ErrNotObtained, err)
		}
		return ok, err
	})
}

// release is the correct release: it forgets the hold's token and runs the
// owner-checked release script for it.
func (l *lock) release(ctx context.Context) error {
	tok := l.take()
	if tok == "" {
		return ErrNotHeld
	}
	n, err := releaseScript.Run(ctx, l.client, []string{l.key}, tok).Int()
	if err != nil {
		return fmt.Errorf("naive: release %q: %w", l.key, err)
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}

// setNXPX is the correct acquire: one SET key token NX PX ttl.
func (l *lock) setNXPX(ctx context.Context) (bool, error) {
	tok := token.New()
	err := l.client.SetArgs(ctx, l.key, tok, redis.SetArgs{Mode: "NX", TTL: l.opts.ttl}).Err()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("naive: acquire %q: %w", l.key, err)
	}
	l.held(tok)
	return true, nil
}
