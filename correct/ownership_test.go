package correct_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/correct"
	"github.com/locklab/locklab/internal/locktest"
)

// TestNotHeld covers every way a Mutex can find it does not hold the lock.
// Each case leaves the Mutex in that state and says what key, if any,
// another holder has; Unlock, Extend and TTL must all return ErrNotHeld
// and leave that key alone.
func TestNotHeld(t *testing.T) {
	const short = 20 * time.Millisecond // expires on purpose
	tests := []struct {
		name string
		// setup returns the Mutex under test and the other holder's
		// Mutex, or nil if the key should be absent.
		setup func(t *testing.T, ctx context.Context, c *redis.Client, key string) (m, other *correct.Mutex)
	}{
		{"never locked", func(t *testing.T, ctx context.Context, c *redis.Client, key string) (*correct.Mutex, *correct.Mutex) {
			return correct.New(c, key), nil
		}},
		{"already unlocked", func(t *testing.T, ctx context.Context, c *redis.Client, key string) (*correct.Mutex, *correct.Mutex) {
			m := correct.New(c, key)
			mustLock(t, ctx, m)
			if err := m.Unlock(ctx); err != nil {
				t.Fatalf("first Unlock = %v; want nil", err)
			}
			return m, nil
		}},
		{"expired", func(t *testing.T, ctx context.Context, c *redis.Client, key string) (*correct.Mutex, *correct.Mutex) {
			m := correct.New(c, key, correct.WithTTL(short))
			mustLock(t, ctx, m)
			waitGone(t, c, key)
			return m, nil
		}},
		{"taken over after expiry", func(t *testing.T, ctx context.Context, c *redis.Client, key string) (*correct.Mutex, *correct.Mutex) {
			m := correct.New(c, key, correct.WithTTL(short))
			mustLock(t, ctx, m)
			waitGone(t, c, key)
			other := correct.New(c, key)
			mustLock(t, ctx, other)
			return m, other
		}},
	}
	ops := []struct {
		name string
		run  func(ctx context.Context, m *correct.Mutex) error
	}{
		{"Unlock", func(ctx context.Context, m *correct.Mutex) error { return m.Unlock(ctx) }},
		{"Extend", func(ctx context.Context, m *correct.Mutex) error { return m.Extend(ctx, time.Minute) }},
		{"TTL", func(ctx context.Context, m *correct.Mutex) error { _, err := m.TTL(ctx); return err }},
	}
	for _, tt := range tests {
		for _, op := range ops {
			t.Run(tt.name+"/"+op.name, func(t *testing.T) {
				c := newClient(t)
				ctx := testContext(t)
				key := newKey(t)
				m, other := tt.setup(t, ctx, c, key)

				if err := op.run(ctx, m); !errors.Is(err, correct.ErrNotHeld) {
					t.Errorf("%s = %v; want ErrNotHeld", op.name, err)
				}
				if m.Token() != "" || !m.Until().IsZero() {
					t.Errorf("after %s: Token() = %q, Until() = %v; want \"\" and zero", op.name, m.Token(), m.Until())
				}
				if other == nil {
					locktest.CheckGone(t, c, key, "after "+op.name)
					return
				}
				// The other holder's lock is untouched: same token, TTL
				// not raised to the minute Extend asked for.
				checkHolds(t, ctx, c, key, other, "the other holder's")
				if ttl := c.PTTL(ctx, key).Val(); ttl <= 0 || ttl > 8*time.Second {
					t.Errorf("PTTL %s = %v; want the other holder's (0, 8s]", key, ttl)
				}
				if err := other.Unlock(ctx); err != nil {
					t.Errorf("other.Unlock = %v; want nil", err)
				}
			})
		}
	}
}

// TestStaleReleaseSparesNewHolder parks a holder right before its release
// until its key has expired and another client holds the lock: the late
// release must fail with ErrNotHeld and leave the new holder's key alone.
// This is the interleaving that breaks a blind DEL.
func TestStaleReleaseSparesNewHolder(t *testing.T) {
	c := newClient(t)
	ctx := testContext(t)
	key := newKey(t)
	b := correct.New(c, key)
	a := correct.New(c, key, correct.WithTTL(20*time.Millisecond),
		correct.WithHook(func(ctx context.Context, point string) {
			if point == correct.HookBeforeRelease {
				waitGone(t, c, key) // a's lease runs out while it is parked
				mustLock(t, ctx, b)
			}
		}))
	mustLock(t, ctx, a)

	if err := a.Unlock(ctx); !errors.Is(err, correct.ErrNotHeld) {
		t.Errorf("late a.Unlock = %v; want ErrNotHeld", err)
	}
	checkHolds(t, ctx, c, key, b, "the new holder b's")
	if err := b.Unlock(ctx); err != nil {
		t.Errorf("b.Unlock = %v; want nil", err)
	}
}
