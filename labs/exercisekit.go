package labs

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// What the exercises build on: the parts of a lock that are not the lab's
// lesson, so that an exercise.go holds little more than the code its
// learner must fix.

// PollInterval is how long [PollLock] waits between two attempts.
const PollInterval = 5 * time.Millisecond

// PollLock is the Lock of an exercise that has only a TryLock to build it
// on: it calls tryLock every [PollInterval] until tryLock takes the lock
// (nil) or fails (its error), or ctx ends (ctx.Err()). An exercise's Lock
// is then one line,
//
//	func (m *Exercise) Lock(ctx context.Context) error { return labs.PollLock(ctx, m.TryLock) }
//
// and what the learner must fix stays in its TryLock and Unlock.
func PollLock(ctx context.Context, tryLock func(context.Context) (bool, error)) error {
	return PollLockPausing(ctx, tryLock, func() time.Duration { return PollInterval })
}

// PollLockPausing is [PollLock] with the wait between two attempts chosen
// by pause, called once per wait: a random pause, say, so that clients
// that collided do not collide again in step.
func PollLockPausing(ctx context.Context, tryLock func(context.Context) (bool, error), pause func() time.Duration) error {
	for {
		ok, err := tryLock(ctx)
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause()):
		}
	}
}

// KeySetter is the one command [TakeKey] sends: *redis.Client and
// *redis.Conn have it, and so has any narrower client an exercise
// declares.
type KeySetter interface {
	SetArgs(ctx context.Context, key string, value any, a redis.SetArgs) *redis.StatusCmd
}

// TakeKey sends SET key tok NX PX ttl, the one command that takes a lock
// key together with its lease, and reports whether Redis set it. It
// reports (false, nil) when the key exists (someone holds the lock), and
// any other error as (false, err).
func TakeKey(ctx context.Context, c KeySetter, key, tok string, ttl time.Duration) (bool, error) {
	err := c.SetArgs(ctx, key, tok, redis.SetArgs{Mode: "NX", TTL: ttl}).Err()
	if errors.Is(err, redis.Nil) {
		return false, nil // the key exists: someone holds the lock
	}
	if err != nil {
		return false, err
	}
	return true, nil
}
