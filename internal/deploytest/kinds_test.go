package deploytest_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/locklab/locklab/correct"
	"github.com/locklab/locklab/fencing"
	"github.com/locklab/locklab/internal/locktest"
	"github.com/locklab/locklab/naive"
	"github.com/locklab/locklab/redlock"
	"github.com/locklab/locklab/reentrant"
	"github.com/locklab/locklab/watchdog"
)

// locker is what every lock kind offers; reentrant's Mutex is adapted by
// asOwner, which carries the Owner in the context.
type locker = locktest.Locker

// kind is one lock package as a deployment sees it: the ACL rules its user
// needs, and how to make a lock on one or more clients.
//
// The ACL rules were found by running each package against a user allowed
// no command at all and adding what ACL LOG reported denied, until the
// package worked (TestACLUserWithPassword checks that ACL LOG stays empty),
// then completed from the package's Lua scripts with the commands of paths
// a short run does not take (marked "rare" below). Redis checks the commands
// a script calls, and the keys it declares, against the user that runs it,
// so the list covers what the scripts do, not just EVALSHA.
//
// The connection itself needs nothing granted: go-redis opens with
// HELLO 3 AUTH user password, which every user may send, and it ignores a
// refused CLIENT SETINFO (Redis 7.2+; 7.0 does not know the command).
type kind struct {
	name string
	// acl are the rules after "ACL SETUSER <user> reset on ><password>".
	acl []string
	// nodes is the number of independent servers the lock needs.
	nodes int
	// cluster reports whether the lock runs on Redis Cluster through a
	// *redis.ClusterClient; redlock needs independent nodes instead.
	cluster bool
	// keys is how many keys a run exercises (naive: one per lock type).
	keys int
	// exclusive reports whether the lock guarantees mutual exclusion
	// without faults; naive's GetThenSet does not even then.
	exclusive bool
	// make returns a lock on key through cs (len(cs) == nodes).
	make func(cs []redis.UniversalClient, key string) locker
	// held, when set, runs while the first client holds the lock.
	held func(ctx context.Context, admin redis.UniversalClient, key string) error
}

// Key patterns: every test key starts with "lock:", and the derived keys
// (fencing's token counter, the wait queues of correct and redlock) put
// the lock key in a hash tag so that they share its cluster slot. An ACL
// that names only "~lock:*" breaks those packages: Redis checks every key
// a script declares, so the patterns must name the derived keys too.
const (
	keysLock    = "~lock:*"
	keysQueue   = "~{lock:*}:q"     // correct, redlock: "{<key>}:q" for a key without a tag
	keysCounter = "~{lock:*}:fence" // fencing: "{<key>}:fence" for a key without a tag
	keysReceipt = "~{lock:*}:r:*"   // release receipts: "{<key>}:r:<token>" (a release sent twice answers from it)

	// infoMemory lets a lock check the server's eviction policy (INFO
	// memory) before it takes a lock. Without it the check is skipped, and
	// Redis logs the refusal in ACL LOG.
	infoMemory = "+info"
)

// Tagged keys ("lock:{orders}:x") keep their tag, so their derived keys
// start with "lock:" and match keysLock.

var kinds = []kind{
	{
		name: "correct",
		// SET NX PX GET to acquire; release.lua GET (the key, and a receipt),
		// DEL, LPOP (the wait queue, empty when polling), LREM (a Lock giving
		// up), PUBLISH and SET (a hand-off to a queued waiter; the receipt);
		// extend.lua PEXPIRE; ttl.lua PTTL. With a Notifier (WithNotifier)
		// also: SUBSCRIBE to its channel correct:w:<id> and PUBLISH to
		// waiters' channels (hence the channel pattern); enqueue.lua and
		// queued.lua LPOS, RPUSH, LREM, PTTL and PEXPIRE on the queue.
		// TestACLCorrectNotifier runs that path.
		acl: []string{keysLock, keysQueue, keysReceipt, "resetchannels", "&correct:w:*", "-@all", infoMemory,
			"+set", "+evalsha", "+eval", "+get", "+del", "+pexpire", "+pttl", "+lpop", "+lrem", "+publish",
			"+rpush", "+lpos", "+subscribe"},
		nodes: 1, cluster: true, exclusive: true,
		make: func(cs []redis.UniversalClient, key string) locker {
			return correct.New(cs[0], key, correct.WithRetry(fastRetry))
		},
	},
	{
		name: "fencing",
		// acquire.lua GET (the key; the counter, for a second run), INCR,
		// DECR (rare: a counter gone negative), SET; release.lua GET, DEL,
		// SET (its receipt); extend.lua GET, PEXPIRE.
		acl: []string{keysLock, keysCounter, keysReceipt, "resetchannels", "-@all", infoMemory,
			"+evalsha", "+eval", "+incr", "+decr", "+set", "+get", "+del", "+pexpire"},
		nodes: 1, cluster: true, exclusive: true,
		make: func(cs []redis.UniversalClient, key string) locker {
			return fencing.New(cs[0], key, fencing.WithRetry(fastRetry))
		},
	},
	{
		name: "watchdog",
		// SET NX PX GET; release.lua GET, DEL, SET (its receipt); extend.lua
		// (each renewal) GET, PEXPIRE.
		acl: []string{keysLock, keysReceipt, "resetchannels", "-@all", infoMemory,
			"+set", "+evalsha", "+eval", "+get", "+del", "+pexpire"},
		nodes: 1, cluster: true, exclusive: true,
		make: func(cs []redis.UniversalClient, key string) locker {
			// A 1s lease renewed every ~333ms: held() sees a renewal within
			// a third of a second and the lease has 2/3 s to spare.
			return watchdog.New(cs[0], key, watchdog.WithTTL(time.Second), watchdog.WithRetry(fastRetry))
		},
		held: waitRenewal,
	},
	{
		name: "reentrant",
		// acquire.lua GET and SET (the call's receipt), EXISTS, HEXISTS,
		// HINCRBY, PTTL, PEXPIRE; release.lua the same and DEL; cancel.lua
		// (a Lock whose reply never came) GET, SET, HEXISTS, HINCRBY, DEL;
		// count.lua HGET; extend.lua HEXISTS, PEXPIRE.
		acl: []string{keysLock, keysReceipt, "resetchannels", "-@all", infoMemory,
			"+evalsha", "+eval", "+get", "+set", "+exists", "+hexists", "+hincrby", "+hget", "+pttl", "+pexpire", "+del"},
		nodes: 1, cluster: true, exclusive: true,
		make: func(cs []redis.UniversalClient, key string) locker {
			return asOwner(reentrant.New(cs[0], key, reentrant.WithRetry(fastRetry)))
		},
	},
	{
		name: "naive",
		// Every type: SET (NX PX, plain, and NX alone: go-redis v9 sends
		// SetNX as SET key value NX, not SETNX), GET, DEL, PEXPIRE, and
		// release.lua (GET, DEL); Counted's scripts EXISTS, HEXISTS,
		// HINCRBY, PEXPIRE, DEL.
		acl: []string{keysLock, "resetchannels", "-@all",
			"+set", "+get", "+del", "+pexpire", "+evalsha", "+eval", "+exists", "+hexists", "+hincrby"},
		nodes: 1, cluster: true, exclusive: false, keys: 6,
		make: func(cs []redis.UniversalClient, key string) locker {
			return naiveLock(cs[0], key)
		},
	},
	{
		name: "redlock",
		// On each node: SET NX PX GET (TryLock); acquire.lua (a waiting
		// Lock) GET, SET, ZADD, ZRANK, PTTL, PEXPIRE, ZPOPMIN, ZREM, PUBLISH
		// on the node's wait queue "{<key>}:q"; release.lua GET (the key,
		// and a receipt), DEL, ZREM, ZPOPMIN, SET, PUBLISH (to waiters'
		// channels redlock:w:<id>); extend.lua GET, PEXPIRE.
		acl: []string{keysLock, keysQueue, keysReceipt, "resetchannels", "&redlock:w:*", "-@all", infoMemory,
			"+set", "+evalsha", "+eval", "+get", "+del", "+pexpire", "+pttl", "+zadd", "+zrank", "+zpopmin", "+zrem", "+publish"},
		nodes: 3, cluster: false, exclusive: true,
		make: func(cs []redis.UniversalClient, key string) locker {
			clients := make([]redlock.Client, len(cs))
			for i, c := range cs {
				clients[i] = c
			}
			return redlock.New(clients, key, redlock.WithRetry(fastRetry))
		},
	},
}

// naiveTypes gives each key its own naive lock type, in turn, so that
// six keys run all six types and both sides of a key use the same one.
var (
	naiveMu    sync.Mutex // protects naiveTypes
	naiveTypes = map[string]int{}
)

func naiveLock(c redis.UniversalClient, key string) locker {
	naiveMu.Lock()
	i, ok := naiveTypes[key]
	if !ok {
		i = len(naiveTypes) % 6
		naiveTypes[key] = i
	}
	naiveMu.Unlock()
	poll := naive.WithPoll(time.Millisecond)
	switch i {
	case 0:
		return naive.NewSetNXThenExpire(c, key, poll)
	case 1:
		return naive.NewGetThenSet(c, key, poll)
	case 2:
		return naive.NewBlindDelete(c, key, poll)
	case 3:
		return naive.NewGetThenDelete(c, key, poll)
	case 4:
		return naive.NewBlindRenewal(c, key, poll)
	default:
		return naive.NewCounted(c, key, poll)
	}
}

// fastRetry polls every millisecond, so contention tests wait for the
// holder, not for a backoff.
func fastRetry(int) time.Duration { return time.Millisecond }

// asOwner runs m as one Owner of its own.
func asOwner(m *reentrant.Mutex) locktest.Bound {
	owner := reentrant.NewOwner()
	return locktest.Bound{L: m, Bind: func(ctx context.Context) context.Context { return reentrant.WithOwner(ctx, owner) }}
}

// waitRenewal waits until the key's TTL goes up between two readings:
// without a renewal it can only go down, so a rise proves the watchdog's
// extend script ran.
func waitRenewal(ctx context.Context, admin redis.UniversalClient, key string) error {
	prev, err := admin.PTTL(ctx, key).Result()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for {
		ttl, err := admin.PTTL(ctx, key).Result()
		if err != nil {
			return fmt.Errorf("PTTL %s while waiting for a renewal: %w", key, err)
		}
		if ttl > prev {
			return nil
		}
		prev = ttl
		if ttl < 0 {
			return fmt.Errorf("%s: PTTL %v; the lock expired without a renewal", key, ttl)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: no renewal within 5s (PTTL %v)", key, ttl)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// contendRounds is how many times each of two clients takes the lock in
// the mutual exclusion check.
const contendRounds = 10

// exercise runs one lock kind on key: a holds it, b is refused, a extends
// (where the kind can) and releases, b takes it and releases. With full,
// it also runs the kind's held check while a holds the lock, and, for
// kinds that promise it, has a and b contend for the lock and checks they
// never overlap. admin checks the key from outside (it may be a or b).
func exercise(ctx context.Context, k kind, a, b []redis.UniversalClient, admin redis.UniversalClient, key string, full bool) error {
	l1, l2 := k.make(a, key), k.make(b, key)
	if err := l1.Lock(ctx); err != nil {
		return fmt.Errorf("%s: first Lock(%q) = %w", k.name, key, err)
	}
	if ok, err := l2.TryLock(ctx); ok || err != nil {
		return fmt.Errorf("%s: second client's TryLock(%q) while held = %v, %v; want false, nil", k.name, key, ok, err)
	}
	if err := extend(ctx, l1); err != nil {
		return fmt.Errorf("%s: Extend(%q) = %w", k.name, key, err)
	}
	if k.held != nil && full {
		if err := k.held(ctx, admin, key); err != nil {
			return fmt.Errorf("%s: %w", k.name, err)
		}
	}
	if err := l1.Unlock(ctx); err != nil {
		return fmt.Errorf("%s: Unlock(%q) = %w", k.name, key, err)
	}
	if ok, err := l2.TryLock(ctx); !ok || err != nil {
		return fmt.Errorf("%s: second client's TryLock(%q) after Unlock = %v, %v; want true, nil", k.name, key, ok, err)
	}
	if err := l2.Unlock(ctx); err != nil {
		return fmt.Errorf("%s: second client's Unlock(%q) = %w", k.name, key, err)
	}
	if k.exclusive && full {
		if err := contend(ctx, k, a, b, key, contendRounds); err != nil {
			return err
		}
	}
	// redlock's Unlock returns once a majority has released; the release
	// to this node may land a moment later.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		n, err := admin.Exists(ctx, key).Result()
		if err == nil && n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: EXISTS %s after the last Unlock = %d, %v; want 0", k.name, key, n, err)
		}
	}
}

// extend extends the lock if the kind can: Extend(ctx, ttl) or, for
// redlock, Extend(ctx) by its own TTL.
func extend(ctx context.Context, l locker) error {
	switch e := l.(type) {
	case interface {
		Extend(context.Context, time.Duration) error
	}:
		return e.Extend(ctx, 5*time.Second)
	case interface{ Extend(context.Context) error }:
		return e.Extend(ctx)
	}
	return nil
}

// contend has a client on each side take the lock rounds times and checks
// that no two holders are ever inside at once.
func contend(ctx context.Context, k kind, a, b []redis.UniversalClient, key string, rounds int) error {
	var inside, overlaps atomic.Int32
	g, ctx := errgroup.WithContext(ctx)
	for _, cs := range [][]redis.UniversalClient{a, b} {
		l := k.make(cs, key)
		g.Go(func() error {
			for i := range rounds {
				if err := l.Lock(ctx); err != nil {
					return fmt.Errorf("%s: contended Lock(%q) #%d = %w", k.name, key, i, err)
				}
				if inside.Add(1) != 1 {
					overlaps.Add(1)
				}
				inside.Add(-1)
				if err := l.Unlock(ctx); err != nil {
					return fmt.Errorf("%s: contended Unlock(%q) #%d = %w", k.name, key, i, err)
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if n := overlaps.Load(); n > 0 {
		return fmt.Errorf("%s: %d overlapping holds of %q; want none", k.name, n, key)
	}
	return nil
}

// isNoPerm reports whether err is Redis's refusal of a command or key by
// the ACL.
func isNoPerm(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOPERM")
}
