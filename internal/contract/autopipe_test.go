package contract_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/retry"
	"github.com/locklab/locklab/internal/rig"
)

// The promises the AutoPipeliner puts to the test. It runs a queued
// command on its own context, not the caller's: a lock that waits for the
// reply as go-redis hands it would wait out the batch's read timeout (3s
// on go-redis's defaults) and its retries, whatever its ctx says. These
// scenarios cut the link (a blackhole: bytes held, delivered on heal) and
// time the calls, on both client kinds.

// deadlineWait is the Lock's deadline in TestLockReturnsByItsDeadline.
// The Lock must return within deadlineSlack of it: the clean-up of its
// unanswered SET (a release bounded by retry.ReleaseTimeout, 2s, which the
// package docs promise) and a second. Without the bound the AutoPipeliner
// waits out its read timeouts and retries: 10s to 75s here.
const (
	deadlineWait  = 100 * time.Millisecond
	deadlineSlack = retry.ReleaseTimeout + time.Second
)

// pipelinedKind admits the kinds run on the AutoPipeliner. (On a plain
// client on go-redis's defaults a context's deadline does not bound the
// socket wait either, by go-redis's design, ContextTimeoutEnabled false;
// see rig.UserOptions.)
func pipelinedKind(k kind) bool { return k.pipelined }

// warm makes l take and give back the lock once, so the preflight's
// result is remembered and the next Lock's first command is its SET.
func warm(t *testing.T, k kind, l locker) {
	t.Helper()
	ctx := t.Context()
	if ok, err := l.TryLock(op(ctx)); !ok || err != nil {
		t.Fatalf("%s: TryLock = %v, %v; want true, nil", k.name, ok, err)
	}
	if err := l.Unlock(op(ctx)); err != nil {
		t.Fatalf("%s: Unlock = %v; want nil", k.name, err)
	}
	settle(op(ctx), l)
}

// gone waits until key is absent on every node of k (a command held by a
// healed blackhole lands a little after the heal), failing after 5s.
func gone(t *testing.T, k kind, key, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for _, n := range servers[:k.nodes] {
		c := redis.NewClient(rig.ClientOptions(n.Addr()))
		for {
			left, err := c.Exists(context.Background(), key).Result()
			if err == nil && left == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("%s: %s: the key %s is still on %s 5s after the link healed (err %v); want it deleted (no key left for a whole TTL)\n%s", k.name, what, key, n.Addr(), err, dump(k, key))
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		_ = c.Close()
	}
}

// TestLockReturnsByItsDeadline: with the link cut, Lock returns by its
// context's deadline, ErrNotObtained joined with context.DeadlineExceeded,
// and once the link heals and the held SET lands, the key is deleted by
// the clean-up sent after it: no key left behind for a whole TTL.
func TestLockReturnsByItsDeadline(t *testing.T) {
	forKinds(t, pipelinedKind, func(t *testing.T, k kind) {
		ps := proxiesFor(t, k)
		key := newKey(t, k)
		a := newParty(t, k, "A", key, longTTL, user, ps)
		warm(t, k, a.lock)
		for _, p := range ps {
			p.Blackhole()
		}
		ctx, cancel := context.WithTimeout(t.Context(), deadlineWait)
		defer cancel()
		start := time.Now()
		err := a.lock.Lock(ctx)
		took := time.Since(start)
		for _, p := range ps {
			p.Heal()
		}
		if !errors.Is(err, k.errNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: Lock with the link cut = %v; want ErrNotObtained joined with context.DeadlineExceeded", k.name, err)
		}
		if took > deadlineWait+deadlineSlack {
			t.Errorf("%s: Lock with a %v deadline and the link cut returned after %v; want by %v", k.name, deadlineWait, took.Round(time.Millisecond), deadlineWait+deadlineSlack)
		}
		settle(op(t.Context()), a.lock)
		if err != nil && (containsFold(err.Error(), "release") || containsFold(err.Error(), "undo")) {
			// The clean-up got no answer within its bound either: the
			// error says so, and the key may stay until its TTL.
			t.Logf("%s: Lock = %v", k.name, err)
			cleanUp(t, k, key)
			return
		}
		gone(t, k, key, "Lock gave up")
	})
}

// TestUnlockReturnsByItsBound: with the link cut, Unlock returns by its own
// 2s bound (it ignores its context's end), with an error; once the link
// heals, the held release lands and deletes the key.
func TestUnlockReturnsByItsBound(t *testing.T) {
	const bound, slack = retry.ReleaseTimeout, 2 * time.Second // redlock: one more per-node timeout (1s)
	forKinds(t, pipelinedKind, func(t *testing.T, k kind) {
		ps := proxiesFor(t, k)
		key := newKey(t, k)
		a := newParty(t, k, "A", key, longTTL, user, ps)
		warm(t, k, a.lock)
		if err := a.lock.Lock(op(t.Context())); err != nil {
			t.Fatalf("%s: Lock = %v", k.name, err)
		}
		settle(op(t.Context()), a.lock)
		for _, p := range ps {
			p.Blackhole()
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel() // a deferred Unlock after the request ended
		start := time.Now()
		err := a.lock.Unlock(ctx)
		took := time.Since(start)
		for _, p := range ps {
			p.Heal()
		}
		if err == nil {
			t.Errorf("%s: Unlock with the link cut = nil; want an error (the outcome is unknown)", k.name)
		}
		if took > bound+slack {
			t.Errorf("%s: Unlock with the link cut returned after %v (%v); want by %v", k.name, took.Round(time.Millisecond), err, bound+slack)
		}
		settle(op(t.Context()), a.lock)
		gone(t, k, key, "Unlock's release held, then delivered")
	})
}

// TestAutoPipelinerUnorderedRefused: an AutoPipeliner that runs batches
// unordered (a release may overtake the SET it follows) is refused by
// the kinds whose clean-up rests on that order, with an error naming it.
// (redlock's does not: its fan-out releases a SET that lands late when the
// SET's own reply comes, in whatever order the node ran them.)
func TestAutoPipelinerUnorderedRefused(t *testing.T) {
	forKinds(t, func(k kind) bool { return k.pipelined && k.notifier == nil && k.nodes == 1 }, func(t *testing.T, k kind) {
		cs := make([]*redis.Client, k.nodes)
		for i := range cs {
			c := redis.NewClient(rig.UserOptions(servers[i].Addr()))
			t.Cleanup(func() { _ = c.Close() })
			ap, err := c.AutoPipelineWithOptions(&redis.AutoPipelineOptions{MaxConcurrentBatches: 4, Unordered: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = ap.Close() })
			pipelined.Store(c, ap)
			t.Cleanup(func() { pipelined.Delete(c) })
			cs[i] = c
		}
		l := k.make(t, env{clients: cs, key: fmt.Sprintf("contract:unordered:%s", k.name), ttl: longTTL, hook: func(context.Context, string) {}})
		err := l.Lock(op(t.Context()))
		if err == nil || !containsFold(err.Error(), "unordered") {
			t.Errorf("%s: Lock on an unordered AutoPipeliner = %v; want an error naming Unordered", k.name, err)
		}
	})
}

// cleanUp deletes key from every node of k: a key the test knows a lock
// left, saying so, until its TTL.
func cleanUp(t *testing.T, k kind, key string) {
	t.Helper()
	for _, n := range servers[:k.nodes] {
		c := redis.NewClient(rig.ClientOptions(n.Addr()))
		if err := c.Del(context.Background(), key).Err(); err != nil {
			t.Errorf("DEL %s: %v", key, err)
		}
		_ = c.Close()
	}
}
