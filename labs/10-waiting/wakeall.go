// Package lab10 holds the waiting strategies lab 10 compares that the lock
// packages do not ship: a lock woken by its holder's release message
// (Redisson's way), the same lock subscribing too late, and a hand-off
// that trusts a message to reach its waiter.
package lab10

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/correct"
	"github.com/locklab/locklab/internal/token"
	"github.com/locklab/locklab/labs"
)

// ErrNotHeld is returned by Unlock when the lock is not ours.
var ErrNotHeld = errors.New("lab10: lock not held")

// ErrNotObtained is returned by Lock when it gave up.
var ErrNotObtained = errors.New("lab10: lock not obtained")

// releaseLua deletes the lock if it is ours and tells every waiter.
const releaseLua = `
if redis.call("GET", KEYS[1]) == ARGV[1] then
	redis.call("DEL", KEYS[1])
	redis.call("PUBLISH", KEYS[1] .. ":released", "1")
	return 1
end
return 0`

var releaseScript = redis.NewScript(releaseLua)

// base is what the wake-all locks share: SET NX PX to take the lock, an
// owner-checked release that publishes on the lock's channel.
type base struct {
	client *redis.Client
	key    string
	ttl    time.Duration
	hook   func(context.Context, string)
	hold
}

// TryLock takes the lock with SET NX PX.
func (m *base) TryLock(ctx context.Context) (bool, error) {
	tok := token.New()
	ok, err := labs.TakeKey(ctx, m.client, m.key, tok, m.ttl)
	if err != nil || !ok {
		return false, err
	}
	m.set(tok)
	return true, nil
}

// Unlock deletes the lock if it is ours and publishes the release.
func (m *base) Unlock(ctx context.Context) error {
	tok := m.take()
	if tok == "" {
		return ErrNotHeld
	}
	n, err := releaseScript.Run(context.WithoutCancel(ctx), m.client, []string{m.key}, tok).Int()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}

func (m *base) channel() string { return m.key + ":released" }

// WakeAll waits for its lock the way Redisson's RLock does: subscribe to the
// lock's release channel FIRST, then try; when refused, sleep until a
// release message arrives (or until the holder's lease would have run out,
// in case the holder died), then try again. Every release wakes every
// waiter, and they race for the lock with SET NX: no polling, but no order
// either.
type WakeAll struct{ base }

// NewWakeAll returns the lock for key; hook is called at
// correct.HookRefused after each refused try.
func NewWakeAll(client *redis.Client, key string, ttl time.Duration, hook func(context.Context, string)) *WakeAll {
	return &WakeAll{base{client: client, key: key, ttl: ttl, hook: hook}}
}

// Lock waits for the lock until it is ours or ctx ends.
func (m *WakeAll) Lock(ctx context.Context) error {
	sub := m.client.Subscribe(ctx, m.channel())
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil { // subscribed before the first try
		return errors.Join(ErrNotObtained, err)
	}
	released := sub.Channel()
	for {
		ok, err := m.TryLock(ctx)
		if err != nil || ok {
			return err
		}
		m.hook(ctx, correct.HookRefused)
		select {
		case <-released: // someone released: race for it
		case <-time.After(m.ttl): // the holder may have died: its lease is over
		case <-ctx.Done():
			return errors.Join(ErrNotObtained, ctx.Err())
		}
	}
}

// WakeAllLate is WakeAll written the intuitive way round, with a bug that
// hides until the timing is just wrong: it tries first and subscribes only
// after it was refused. A release published between the refusal and the
// SUBSCRIBE goes to nobody, and the waiter then sleeps until its context
// ends: the lost wake-up. (It also trusts messages alone, with no time
// limit on a wait.)
type WakeAllLate struct{ base }

// NewWakeAllLate returns the lock for key; hook is called at
// correct.HookRefused after each refused try.
func NewWakeAllLate(client *redis.Client, key string, ttl time.Duration, hook func(context.Context, string)) *WakeAllLate {
	return &WakeAllLate{base{client: client, key: key, ttl: ttl, hook: hook}}
}

// Lock waits for the lock until it is ours or ctx ends.
func (m *WakeAllLate) Lock(ctx context.Context) error {
	for {
		ok, err := m.TryLock(ctx)
		if err != nil || ok {
			return err
		}
		m.hook(ctx, correct.HookRefused) // the window: a release now is missed
		sub := m.client.Subscribe(ctx, m.channel())
		_, err = sub.ReceiveMessage(ctx) // the next release, if one ever comes
		sub.Close()
		if err != nil {
			if cerr := ctxErr(ctx); cerr != nil {
				err = cerr
			}
			return errors.Join(ErrNotObtained, err)
		}
	}
}

// ctxErr returns ctx.Err(), waiting for it once ctx's deadline has passed:
// go-redis sets socket deadlines from ctx, so its "i/o timeout" can come a
// moment before the context's own timer fires, and the error must say the
// deadline ended the wait either way.
func ctxErr(ctx context.Context) error {
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		<-ctx.Done()
	}
	return ctx.Err()
}
