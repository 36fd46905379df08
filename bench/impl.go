package main

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/rig"
)

// locker is all the bench needs from a lock: one lock on one key, held by
// one contending client. The lock packages' Mutex types satisfy it as they
// are; peers get a small adapter.
type locker interface {
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
}

// contender is one contending client with its own connections (its own
// go-redis pool per server, or its own rueidis client), as a separate
// process would have. It hands out a locker per key and is used by one
// goroutine at a time.
type contender struct {
	// locker returns the lock on key for this client.
	locker func(key string) locker
	// close releases the client's connections.
	close func() error
	// sent counts the commands the client handed to go-redis (round trips
	// in effect); nil when the client is not go-redis.
	sent *atomic.Int64
}

// env is what an implementation's constructor gets: the servers to use and
// the lock settings shared by every implementation.
type env struct {
	// addrs are the lock servers, in order; single-node locks use addrs[0].
	// In the rtt scenario they are fault proxies in front of the servers.
	addrs []string
	// ttl is the lease of every lock (redsync's default, 8s, unless -ttl).
	ttl time.Duration
	// users, set by the fault scoreboard, makes the clients as users run
	// them (library defaults, Sentinel); nil: the rig's options.
	users *userClients
	// hook, when set, is given to the locks that take one (package naive's
	// hook points), for the fault scoreboard's staged interleavings.
	hook func(ctx context.Context, point string)
}

// client returns a go-redis client for addrs[i] with the rig's options
// (2s timeouts, no retries, context deadlines honoured), or as users run
// them when e.users is set, and a hook that counts commands into sent.
func (e env) client(i int, sent *atomic.Int64) *redis.Client {
	var c *redis.Client
	if e.users != nil {
		c = e.users.client(i, e.addrs[i])
	} else {
		c = redis.NewClient(rig.ClientOptions(e.addrs[i]))
	}
	if sent != nil {
		rig.OnCommand(c, func(string) { sent.Add(1) })
	}
	return c
}

// oneServer returns the contender of a lock on addrs[0] alone: one
// client (see client), counting its commands and closed with the
// contender, and lockOn(client, key) as its lock on each key.
func (e env) oneServer(lockOn func(c *redis.Client, key string) locker) contender {
	sent := new(atomic.Int64)
	c := e.client(0, sent)
	return contender{
		locker: func(key string) locker { return lockOn(c, key) },
		close:  c.Close,
		sent:   sent,
	}
}

// clients returns go-redis clients (see client) for the first n servers,
// or, when there are fewer, an error saying that the lock named name needs
// n of them.
func (e env) clients(name string, n int, sent *atomic.Int64) ([]*redis.Client, error) {
	if len(e.addrs) < n {
		return nil, fmt.Errorf("%s needs %d servers, have %d", name, n, len(e.addrs))
	}
	cs := make([]*redis.Client, n)
	for i := range cs {
		cs[i] = e.client(i, sent)
	}
	return cs, nil
}

// closeAll closes every client and returns the first error.
func closeAll(cs []*redis.Client) error {
	var first error
	for _, c := range cs {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// impl describes one lock implementation the bench can run. Each lives in
// its own impl_*.go file that registers it from init, so adding a lock is
// one small file with one constructor.
type impl struct {
	// name is the name used in -impls and in the results.
	name string
	// nodes is the number of servers the lock uses: 1, or 5 for Redlock.
	nodes int
	// naive marks a deliberately unsafe lock: it runs only when named in
	// -impls and is expected to show violations under contention.
	naive bool
	// kind says whose the lock is, for the report: ours (the default),
	// a peer, the floor, or naive (set by register when naive is).
	kind implKind
	// noFaults, when set, says why the fault scoreboard cannot run this
	// lock (its faults are Redis servers', proxies on Redis addresses): it
	// is left out of the default -scenarios faults set.
	noFaults string
	// connect makes one contending client.
	connect func(e env) (contender, error)
	// keepsKeys marks a lock that leaves keys behind by design (fencing's
	// token counters): the bench still deletes them after each run but does
	// not report them as leftovers.
	keepsKeys bool
	// scenarios, when set, are the only scenarios the lock runs in (the
	// locks on etcd, ZooKeeper and PostgreSQL skip rtt, whose proxies sit
	// in front of the Redis servers only).
	scenarios []string
	// gaveUp reports whether an error from Lock is the lock's "gave up"
	// outcome (counted, then retried with the same start of the wait)
	// rather than a transport or other failure.
	gaveUp func(err error) bool
	// claims says, per fault schedule id, what the lock claims to survive
	// or names as a fault it does not (claims.go); the fault scoreboard
	// checks every run against it.
	claims claims
}

// gaveUpOn returns the gaveUp of a lock whose Lock gives up with
// notObtained (its ErrNotObtained) and no other way.
func gaveUpOn(notObtained error) func(err error) bool {
	return func(err error) bool { return errors.Is(err, notObtained) }
}

// implKind sorts the implementations into the report's groups.
type implKind string

const (
	kindOurs  implKind = "ours"  // locklab's own locks
	kindPeer  implKind = "peer"  // other projects' locks
	kindFloor implKind = "floor" // raw commands, no library: what the machine allows
	kindNaive implKind = "naive" // deliberately broken
)

// baseline returns the peer whose same-round figures this impl's ratios are
// computed against: redsync-5 for 5-node locks, redsync-1 otherwise.
func (im *impl) baseline() string {
	if im.nodes > 1 {
		return "redsync-5"
	}
	return "redsync-1"
}

// floor returns the raw floor for this impl's node count: raw-5 for 5-node
// locks, raw otherwise.
func (im *impl) floor() string {
	if im.nodes > 1 {
		return "raw-5"
	}
	return "raw"
}

var registry = map[string]*impl{}

// register adds an implementation; it is called from init functions only.
func register(im *impl) {
	if _, dup := registry[im.name]; dup {
		panic("bench: implementation registered twice: " + im.name)
	}
	if im.nodes != 1 && im.nodes != 5 {
		panic("bench: implementation " + im.name + " wants an unsupported node count")
	}
	switch {
	case im.naive:
		im.kind = kindNaive
	case im.kind == "":
		im.kind = kindOurs
	}
	registry[im.name] = im
}

// plannedImpls are lock kinds the project plans but that may not be in this
// build yet; naming one gives a clearer error than "unknown".
var plannedImpls = []string{"correct", "watchdog", "reentrant", "fencing", "redlock-5"}

// implOrder is the display order: ours first, then the peers.
var implOrder = []string{
	"correct", "correct-poll", "correct+keep", "watchdog", "reentrant", "fencing", "redlock-5", "redlock-5-poll",
	"redsync-1", "redsync-5", "redislock", "rueidislock", "raw", "raw-again", "raw+receipt", "raw-5", "raw-5+receipt",
}

// sortedImpls returns registered names in display order (naive last).
func sortedImpls(names []string) []string {
	rank := func(n string) int {
		if i := slices.Index(implOrder, n); i >= 0 {
			return i
		}
		return len(implOrder)
	}
	out := slices.Clone(names)
	sort.SliceStable(out, func(i, j int) bool {
		ri, rj := rank(out[i]), rank(out[j])
		if ri != rj {
			return ri < rj
		}
		return out[i] < out[j]
	})
	return out
}

// defaultImpls returns every registered safe implementation.
func defaultImpls() []string {
	var names []string
	for n, im := range registry {
		if !im.naive {
			names = append(names, n)
		}
	}
	return sortedImpls(names)
}

// resolveImpls turns the -impls list into implementations. An entry may be
// a glob ("naive-*"); an empty list means every safe implementation.
func resolveImpls(list []string) ([]*impl, error) {
	if len(list) == 0 {
		list = defaultImpls()
	}
	var all []string
	for n := range registry {
		all = append(all, n)
	}
	all = sortedImpls(all)
	var out []*impl
	seen := map[string]bool{}
	for _, want := range list {
		var matched []string
		if strings.ContainsAny(want, "*?[") {
			for _, n := range all {
				if ok, err := path.Match(want, n); err != nil {
					return nil, fmt.Errorf("-impls: bad pattern %q: %v", want, err)
				} else if ok {
					matched = append(matched, n)
				}
			}
		} else if _, ok := registry[want]; ok {
			matched = []string{want}
		}
		if len(matched) == 0 {
			if slices.Contains(plannedImpls, want) || strings.HasPrefix(want, "naive-") {
				return nil, fmt.Errorf("-impls: %q is not in this build yet (its package does not exist or does not compile); available: %s", want, strings.Join(all, ", "))
			}
			return nil, fmt.Errorf("-impls: unknown implementation %q; available: %s", want, strings.Join(all, ", "))
		}
		for _, n := range matched {
			if !seen[n] {
				seen[n] = true
				out = append(out, registry[n])
			}
		}
	}
	return out, nil
}

// holdPast calls lock with a context that ctx cancels only while lock is
// waiting. Locks whose hold is bound to their Lock context (watchdog,
// rueidislock) would otherwise release by themselves when the run ends
// mid-hold, while the bench's holder is still inside its critical section,
// and the ledger would rightly count the next holder as a violation. If
// ctx ended while lock waited and lock succeeded all the same, release is
// called and ctx's error returned. The returned function ends the hold
// context; call it after unlocking.
func holdPast(ctx context.Context, lock func(context.Context) error, release func()) (context.CancelFunc, error) {
	hold, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	err := lock(hold)
	if !stop() { // ctx ended during the wait: hold is cancelled too
		if err == nil {
			release()
			err = ctx.Err()
		}
		cancel()
		return nil, err
	}
	if err != nil {
		cancel()
		return nil, err
	}
	return cancel, nil
}
