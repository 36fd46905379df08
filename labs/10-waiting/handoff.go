package lab10

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/correct"
	"github.com/locklab/locklab/internal/token"
	"github.com/locklab/locklab/labs"
)

// blindReleaseLua hands the lock to the next waiter without asking whether
// anyone is there to take it.
const blindReleaseLua = `
if redis.call("GET", KEYS[1]) ~= ARGV[1] then
	return 0
end
local nxt = redis.call("LPOP", KEYS[2])
if not nxt then
	redis.call("DEL", KEYS[1])
	return 1
end
redis.call("SET", KEYS[1], nxt, "PX", ARGV[2])
local id = string.match(nxt, "^([^.]+)%.")
redis.call("PUBLISH", "lab10:w:" .. id, nxt) -- the mistake: PUBLISH's count is ignored
return 2`

var blindReleaseScript = redis.NewScript(blindReleaseLua)

// BlindHandoff is a first-come, first-served lock with direct hand-off, as
// package correct's Notifier does, minus one check: its release hands the
// lock to the oldest waiter and PUBLISHes to it without looking at how many
// subscribers received the message. A waiter whose process died while it
// waited is handed the lock anyway; the lock then sits with the dead until
// its TTL runs out, and everyone queued behind waits (with no periodic
// check, they wait for a message that never comes).
type BlindHandoff struct {
	client *redis.Client
	key    string
	queue  string
	ttl    time.Duration
	hook   func(context.Context, string)
	id     string
	sub    *redis.PubSub
	hold
}

// NewBlindHandoff subscribes to the client's own channel and returns the
// lock for key; Close ends the subscription. hook is called at
// correct.HookQueued once the waiter is in the queue.
func NewBlindHandoff(ctx context.Context, client *redis.Client, key string, ttl time.Duration, hook func(context.Context, string)) (*BlindHandoff, error) {
	id := token.New()
	sub := client.Subscribe(ctx, "lab10:w:"+id)
	if _, err := sub.Receive(ctx); err != nil {
		_ = sub.Close()
		return nil, err
	}
	return &BlindHandoff{client: client, key: key, queue: "{" + key + "}:q", ttl: ttl, hook: hook, id: id, sub: sub}, nil
}

// Close ends the subscription.
func (m *BlindHandoff) Close() error { return m.sub.Close() }

// TryLock takes the lock with SET NX PX.
func (m *BlindHandoff) TryLock(ctx context.Context) (bool, error) {
	tok := m.id + "." + token.New()
	ok, err := labs.TakeKey(ctx, m.client, m.key, tok, m.ttl)
	if err != nil || !ok {
		return false, err
	}
	m.set(tok)
	return true, nil
}

// Lock takes the lock, or queues and waits for it to be handed over.
func (m *BlindHandoff) Lock(ctx context.Context) error {
	if ok, err := m.TryLock(ctx); err != nil || ok {
		return err
	}
	tok := m.id + "." + token.New()
	n, err := m.client.RPush(ctx, m.queue, tok).Result()
	if err != nil {
		return err
	}
	if n == 1 { // first in line: the holder may have gone meanwhile
		if ok, err := m.client.SetArgs(ctx, m.key, tok, redis.SetArgs{Mode: "NX", TTL: m.ttl}).Result(); err == nil && ok == "OK" {
			m.client.LRem(ctx, m.queue, 0, tok)
			m.set(tok)
			return nil
		}
	}
	m.hook(ctx, correct.HookQueued)
	for {
		msg, err := m.sub.ReceiveMessage(ctx)
		if err != nil {
			m.client.LRem(context.WithoutCancel(ctx), m.queue, 0, tok)
			if cerr := ctxErr(ctx); cerr != nil {
				err = cerr
			}
			return errors.Join(ErrNotObtained, err)
		}
		if msg.Payload == tok {
			m.set(tok)
			return nil
		}
	}
}

// Unlock releases the lock, handing it to the oldest waiter if any.
func (m *BlindHandoff) Unlock(ctx context.Context) error {
	tok := m.take()
	if tok == "" {
		return ErrNotHeld
	}
	n, err := blindReleaseScript.Run(context.WithoutCancel(ctx), m.client, []string{m.key, m.queue}, tok, m.ttl.Milliseconds()).Int()
	if err != nil {
		return fmt.Errorf("lab10: release: %w", err)
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}
