package contract_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/correct"
	"github.com/locklab/locklab/fencing"
	"github.com/locklab/locklab/internal/locktest"
	"github.com/locklab/locklab/redlock"
	"github.com/locklab/locklab/reentrant"
	"github.com/locklab/locklab/watchdog"
)

// locker is what every lock kind offers.
type locker = locktest.Locker

// env is what a kind gets to make one party's lock: that party's own
// clients (one per node, each through the party's proxy when it is under
// test), the key, the TTL and the hook to wire into WithHook.
type env struct {
	clients  []*redis.Client
	key      string
	ttl      time.Duration
	hook     func(ctx context.Context, point string)
	notifier any // the party's process's Notifier, for queued kinds
	// nodeTimeout is redlock's per-node timeout; 0 for its default.
	nodeTimeout time.Duration
	// ownRetry: the lock retries on its package's own default delays and
	// tries, as a user's does, not on fastRetry.
	ownRetry bool
}

// retryOf returns the delays a polling lock of e retries on: fastRetry,
// or nil (the package's default) for ownRetry.
func (e env) retryOf() func(int) time.Duration {
	if e.ownRetry {
		return nil
	}
	return fastRetry
}

// kind is one lock package, or one way of using it.
type kind struct {
	name  string
	nodes int
	// queued: Lock waits in a queue and is handed the lock (a Notifier);
	// the hand-off scenarios apply.
	queued bool
	// queuedHook is the hook point that fires once a waiter is in the
	// queue; refusedHook, after its first try found the lock taken and
	// before it joins the queue.
	queuedHook, refusedHook string
	// deadWaiter puts the token of a waiter whose process is gone (nobody
	// listens on its channel) at the head of key's queue on node c.
	deadWaiter func(ctx context.Context, c *redis.Client, key string) error
	// errNotObtained and errNotHeld are the package's sentinels.
	errNotObtained, errNotHeld error
	// reentrant: the party may lock again while it holds the lock.
	reentrant bool
	// persistent are suffixes of keys the kind keeps on purpose with no
	// TTL (fencing's token counter must never go back).
	persistent []string
	make       func(t *testing.T, e env) locker
	// notifier makes a process's Notifier on its clients (queued kinds);
	// it is closed when the test ends.
	notifier func(t *testing.T, clients []*redis.Client) any
	// pending, while set, skips the kind: its fixes are not in yet.
	pending bool
	// pipelined: the kind's locks use their party's AutoPipeliner
	// (clients_test.go).
	pipelined bool
}

// keeps reports whether key is one the kind keeps on purpose.
func (k kind) keeps(key string) bool {
	for _, s := range k.persistent {
		if strings.HasSuffix(key, s) {
			return true
		}
	}
	return false
}

var kinds = []kind{
	{
		name: "correct", nodes: 1,
		errNotObtained: correct.ErrNotObtained, errNotHeld: correct.ErrNotHeld,
		make: func(_ *testing.T, e env) locker {
			return correct.New(clientOf(e.clients[0]), e.key, correct.WithTTL(e.ttl), correct.WithHook(e.hook), correct.WithRetry(e.retryOf()))
		},
	},
	{
		name: "correct+notifier", nodes: 1, queued: true, queuedHook: correct.HookQueued, refusedHook: correct.HookRefused,
		errNotObtained: correct.ErrNotObtained, errNotHeld: correct.ErrNotHeld,
		deadWaiter: func(ctx context.Context, c *redis.Client, key string) error {
			return c.RPush(ctx, queueKey(key), "deadnotifier.10000.deadtoken").Err()
		},
		notifier: func(t *testing.T, cs []*redis.Client) any {
			n, err := correct.NewNotifier(t.Context(), clientOf(cs[0]))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = n.Close() })
			return n
		},
		make: func(t *testing.T, e env) locker {
			return correct.New(clientOf(e.clients[0]), e.key, correct.WithTTL(e.ttl), correct.WithHook(e.hook), correct.WithNotifier(e.notifier.(*correct.Notifier)))
		},
	},
	{
		name: "redlock", nodes: 3,
		errNotObtained: redlock.ErrNotObtained, errNotHeld: redlock.ErrNotHeld,
		make: func(_ *testing.T, e env) locker {
			opts := []redlock.Option{redlock.WithTTL(e.ttl), redlock.WithHook(e.hook), redlock.WithRetry(e.retryOf())}
			if !e.ownRetry {
				// Polling every millisecond, redlock's default 32 tries
				// last about 40ms, less than one party's turn when
				// replies are lost (fresh-clone CI: "still held after 32
				// tries" in TestExclusiveWithRepliesLost); with its own
				// delays they last seconds. The context bounds the wait.
				opts = append(opts, redlock.WithTries(0))
			}
			return redlock.New(redlockClients(e.clients), e.key, opts...)
		},
	},
	{
		name: "redlock+notifier", nodes: 3, queued: true, queuedHook: redlock.HookQueued, refusedHook: redlock.HookRefused,
		errNotObtained: redlock.ErrNotObtained, errNotHeld: redlock.ErrNotHeld,
		deadWaiter: func(ctx context.Context, c *redis.Client, key string) error {
			dead := redis.Z{Score: 0, Member: "deadnotifier.10000.deadwaiter.1"} // ranks before everyone
			return c.ZAdd(ctx, queueKey(key), dead).Err()
		},
		notifier: func(t *testing.T, cs []*redis.Client) any {
			ncs := make([]redlock.NotifyClient, len(cs))
			for i, c := range cs {
				ncs[i] = clientOf(c)
			}
			n, err := redlock.NewNotifier(t.Context(), ncs)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = n.Close() })
			return n
		},
		make: func(t *testing.T, e env) locker {
			opts := []redlock.Option{redlock.WithTTL(e.ttl), redlock.WithHook(e.hook), redlock.WithNotifier(e.notifier.(*redlock.Notifier))}
			if e.nodeTimeout > 0 {
				opts = append(opts, redlock.WithNodeTimeout(e.nodeTimeout))
			}
			return redlock.New(redlockClients(e.clients), e.key, opts...)
		},
	},
	{
		name: "watchdog", nodes: 1,
		errNotObtained: watchdog.ErrNotObtained, errNotHeld: watchdog.ErrNotHeld,
		make: func(_ *testing.T, e env) locker {
			return watchdog.New(clientOf(e.clients[0]), e.key, watchdog.WithTTL(e.ttl), watchdog.WithHook(e.hook), watchdog.WithRetry(e.retryOf()))
		},
	},
	{
		name: "reentrant", nodes: 1, reentrant: true,
		errNotObtained: reentrant.ErrNotObtained, errNotHeld: reentrant.ErrNotHeld,
		make: func(_ *testing.T, e env) locker {
			return asOwner(reentrant.New(clientOf(e.clients[0]), e.key, reentrant.WithTTL(e.ttl), reentrant.WithHook(e.hook), reentrant.WithRetry(e.retryOf())))
		},
	},
	{
		name: "fencing", nodes: 1, persistent: []string{":fence"},
		errNotObtained: fencing.ErrNotObtained, errNotHeld: fencing.ErrNotHeld,
		make: func(_ *testing.T, e env) locker {
			return fencing.New(clientOf(e.clients[0]), e.key, fencing.WithTTL(e.ttl), fencing.WithHook(e.hook), fencing.WithRetry(e.retryOf()))
		},
	},
}

func redlockClients(cs []*redis.Client) []redlock.Client {
	out := make([]redlock.Client, len(cs))
	for i, c := range cs {
		out[i] = clientOf(c)
	}
	return out
}

// fastRetry polls every millisecond, so that a waiting Lock waits for the
// holder, not for its backoff.
func fastRetry(int) time.Duration { return time.Millisecond }

// asOwner runs m as one Owner of its own.
func asOwner(m *reentrant.Mutex) locktest.Bound {
	owner := reentrant.NewOwner()
	return locktest.Bound{L: m, Bind: func(ctx context.Context) context.Context { return reentrant.WithOwner(ctx, owner) }}
}

// forKinds runs scenario as a subtest for each kind that which admits
// (anyKind, queuedKind).
func forKinds(t *testing.T, which func(kind) bool, scenario func(t *testing.T, k kind)) {
	for _, k := range kinds {
		if !which(k) {
			continue
		}
		t.Run(k.name, func(t *testing.T) {
			k.skipPending(t)
			scenario(t, k)
		})
	}
}

func anyKind(kind) bool      { return true }
func queuedKind(k kind) bool { return k.queued }

// forQueued runs scenario for each kind whose Lock waits in a queue.
func forQueued(t *testing.T, scenario func(t *testing.T, k kind)) { forKinds(t, queuedKind, scenario) }

func (k kind) skipPending(t *testing.T) {
	if k.pending {
		t.Skip("fixes pending")
	}
}
