package correct_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/correct"
	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/internal/rig"
)

// TestLateTakeAfterGiveUp: a Lock gives up while its command that takes
// the key is held in the network (a partition), and so is the give-up's
// own release. The partition heals, and the network delivers the release
// first: it finds nothing to release. Then the held command lands. It must
// take nothing: a SET NX landing there re-created the key for a whole TTL
// with nobody holding the lock (seen: "the key holds ... for 19.787s").
// The same for the two other commands that take a free key: a waiter's
// join (enqueue.lua) and a queued waiter's own look (queued.lua).
func TestLateTakeAfterGiveUp(t *testing.T) {
	type scene struct {
		// held is the script whose first run on the key the network holds.
		held string
		ttl  time.Duration
		// giveUp is when a's Lock gives up (its ctx's deadline): well after
		// held is sent.
		giveUp time.Duration
		// arrange starts a's Lock (on m, with ctx) so that it sends held,
		// and returns once that is held; then a gives up, and free, if
		// not nil, frees the lock (its other holder unlocks).
		arrange func(t *testing.T, ctx context.Context, m *correct.Mutex, held *faultproxy.Rule) (lockErr <-chan error, free func())
	}
	lockAsync := func(ctx context.Context, m *correct.Mutex) <-chan error {
		done := make(chan error, 1)
		go func() { done <- m.Lock(ctx) }()
		return done
	}
	waitHeld := func(t *testing.T, ctx context.Context, r *faultproxy.Rule) {
		t.Helper()
		if err := r.Wait(ctx, 1); err != nil {
			t.Fatalf("the command to hold never came: %v", err)
		}
	}
	// holdBy locks key on its own client, for a to wait behind.
	holdBy := func(t *testing.T, ctx context.Context, key string) *correct.Mutex {
		t.Helper()
		b := correct.New(newClient(t), key, correct.WithTTL(20*time.Second))
		if err := b.Lock(ctx); err != nil {
			t.Fatalf("b's Lock = %v", err)
		}
		return b
	}
	unlock := func(t *testing.T, ctx context.Context, b *correct.Mutex) func() {
		return func() {
			if err := b.Unlock(ctx); err != nil {
				t.Errorf("b's Unlock = %v", err)
			}
		}
	}
	scenes := map[string]scene{
		"polling: the try's take.lua": {
			held: "take.lua", ttl: 20 * time.Second, giveUp: time.Second,
			arrange: func(t *testing.T, ctx context.Context, m *correct.Mutex, held *faultproxy.Rule) (<-chan error, func()) {
				done := lockAsync(ctx, m)
				waitHeld(t, ctx, held)
				return done, nil
			},
		},
		"notifier: the join (enqueue.lua)": {
			held: "enqueue.lua", ttl: 20 * time.Second, giveUp: time.Second,
			arrange: func(t *testing.T, ctx context.Context, m *correct.Mutex, held *faultproxy.Rule) (<-chan error, func()) {
				b := holdBy(t, ctx, m.Key())
				done := lockAsync(ctx, m)
				waitHeld(t, ctx, held)
				return done, unlock(t, context.Background(), b)
			},
		},
		"notifier: a queued waiter's look (queued.lua)": {
			held: "queued.lua", ttl: time.Second, giveUp: 1500 * time.Millisecond, // a look every ttl/4
			arrange: func(t *testing.T, ctx context.Context, m *correct.Mutex, held *faultproxy.Rule) (<-chan error, func()) {
				b := holdBy(t, ctx, m.Key())
				done := lockAsync(ctx, m)
				waitHeld(t, ctx, held)
				return done, unlock(t, context.Background(), b)
			},
		},
	}
	for name, sc := range scenes {
		t.Run(name, func(t *testing.T) {
			ctx := testContext(t)
			key := newKey(t)
			p := faultproxy.Start(t, redisAddr)
			// A user's client, but one that stops reading at ctx's
			// deadline: on go-redis's defaults, a's Lock and its release
			// each waited out the 3s ReadTimeout.
			o := rig.UserOptions(p.Addr())
			o.ContextTimeoutEnabled = true
			c := redis.NewClient(o)
			t.Cleanup(func() { _ = c.Close() })
			warm(t, c)
			opts := []correct.Option{correct.WithTTL(sc.ttl)}
			if sc.held != "take.lua" {
				opts = append(opts, correct.WithNotifier(notifierOn(t, newClient(t))))
			}
			m := correct.New(c, key, opts...)
			held := p.Hold(faultproxy.Match{Script: correct.Scripts[sc.held].Script.Hash(), Key: key}, 1)
			rel := p.Hold(faultproxy.Match{Script: correct.Scripts["release.lua"].Script.Hash(), Key: key}, 0)

			lctx, cancel := context.WithTimeout(ctx, sc.giveUp)
			defer cancel()
			done, free := sc.arrange(t, lctx, m, held) // then a gives up
			if err := rel.Wait(ctx, 1); err != nil {
				t.Fatalf("the give-up sent no release: %v", err)
			}
			if free != nil {
				free()
			}
			if err := <-done; err == nil {
				t.Fatal("a's Lock, its command held and its ctx ended, = nil; want an error")
			}
			rel.Remove() // the heal: the releases land first...
			if err := rel.Answered(ctx, rel.Hits()); err != nil {
				t.Fatal(err)
			}
			held.Remove() // ...then the command that takes the key
			if err := held.Answered(ctx, 1); err != nil {
				t.Fatal(err)
			}

			admin := newClient(t)
			if v := admin.Get(ctx, key).Val(); v != "" {
				t.Errorf("%s, landing after a gave up and after its release, left the key holding %q for %v: nobody holds it",
					sc.held, v, admin.PTTL(ctx, key).Val())
				admin.Del(ctx, key)
			}
			if q := admin.LRange(ctx, queueOf(key), 0, -1).Val(); len(q) > 0 {
				t.Errorf("%s, landing late, left %q queued: a waiter that gave up", sc.held, q)
				admin.Del(ctx, queueOf(key))
			}
		})
	}
}
