// Package registry is the bench's lock registry: one file per lock, each
// saying how to connect to it (Connect, with the servers in Env) and what
// it is (Nodes, Kind, System, Order, LossSignal, the tokens it shows, the
// faults it Claims to survive), as fields of its Lock. Nothing elsewhere
// in the bench lists locks by name.
package registry

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/rig"
)

// Locker is all the bench needs from a lock: one lock on one key, held by
// one contending client. The lock packages' Mutex types satisfy it as they
// are; peers get a small adapter.
type Locker interface {
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
}

// Contender is one contending client with its own connections (its own
// go-redis pool per server, or its own rueidis client), as a separate
// process would have. It hands out a locker per key and is used by one
// goroutine at a time.
type Contender struct {
	// Locker returns the lock on key for this client.
	Locker func(key string) Locker
	// Close releases the client's connections.
	Close func() error
	// Sent counts the commands the client handed to go-redis (round trips
	// in effect); nil when the client is not go-redis.
	Sent *atomic.Int64
}

// Env is what an implementation's constructor gets: the servers to use and
// the lock settings shared by every implementation.
type Env struct {
	// Addrs are the lock servers, in order; single-node locks use Addrs[0].
	// In the rtt scenario they are fault proxies in front of the servers.
	Addrs []string
	// TTL is the lease of every lock (redsync's default, 8s, unless -TTL).
	TTL time.Duration
	// Users, set by the fault scoreboard, makes the clients as Users run
	// them (library defaults, Sentinel); nil: the rig's options.
	Users *UserClients
	// Hook, when set, is given to the locks that take one (package naive's
	// Hook points), for the fault scoreboard's staged interleavings.
	Hook func(ctx context.Context, point string)
	// Servers are the bench's own etcd, ZooKeeper and PostgreSQL servers,
	// started on first use; nil in a run with no lock on them.
	Servers Servers
	// Pipeliners, when set, are go-redis AutoPipeliners on the lock
	// servers, one per server in Addrs' order, shared by the clients of one
	// process: the lock's commands go through them (see Redis). A lock
	// whose API takes none says why in its Lock's NoPipeliner.
	Pipeliners []*redis.AutoPipeliner
	// Deployment, when Set (-addrs cluster://... or sentinel://...), is
	// how server 0 is reached: a ClusterClient on the cluster or a
	// FailoverClient through the sentinels, not Addrs[0] (which is then
	// the first primary, for the bench's own counters).
	Deployment
}

// Client returns a go-redis client for addrs[i] with the rig's options
// (2s timeouts, no retries, context deadlines honoured), or as users run
// them when e.users is set, and a hook that counts commands into sent.
// Server 0 on a Deployment is a ClusterClient or a FailoverClient (see
// Deployment); every other server is a *redis.Client.
func (e Env) Client(i int, sent *atomic.Int64) redis.UniversalClient {
	var c redis.UniversalClient
	switch {
	case e.Users != nil:
		c = e.Users.Client(i, e.Addrs[i])
	case i == 0 && e.Deployment.Set():
		c = e.Deployment.client(rigOptions())
	default:
		c = redis.NewClient(rig.ClientOptions(e.Addrs[i]))
	}
	if sent != nil {
		rig.OnCommand(c, func(string) { sent.Add(1) })
	}
	return c
}

// OneServer returns the contender of a lock on addrs[0] alone: one
// client (see client), counting its commands and closed with the
// contender, and lockOn(e.Redis(0, client), key) as its lock on each key.
func (e Env) OneServer(lockOn func(c redis.UniversalClient, key string) Locker) Contender {
	sent := new(atomic.Int64)
	c := e.Client(0, sent)
	return Contender{
		Locker: func(key string) Locker { return lockOn(e.Redis(0, c), key) },
		Close:  c.Close,
		Sent:   sent,
	}
}

// Clients returns go-redis Clients (see client) for the first n servers,
// or, when there are fewer, an error saying that the lock named name needs
// n of them.
func (e Env) Clients(name string, n int, sent *atomic.Int64) ([]redis.UniversalClient, error) {
	if n > 1 && e.Deployment.Set() {
		return nil, fmt.Errorf("%s needs %d independent servers: %s", name, n, e.Deployment.what())
	}
	if len(e.Addrs) < n {
		return nil, fmt.Errorf("%s needs %d servers, have %d", name, n, len(e.Addrs))
	}
	if e.Pipeliners != nil && len(e.Pipeliners) < n {
		return nil, fmt.Errorf("%s needs %d servers, have %d AutoPipeliners", name, n, len(e.Pipeliners))
	}
	cs := make([]redis.UniversalClient, n)
	for i := range cs {
		cs[i] = e.Client(i, sent)
	}
	return cs, nil
}

// closeAll closes every client and returns the first error.
func closeAll(cs []redis.UniversalClient) error {
	var first error
	for _, c := range cs {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Lock is one lock the bench can run, and everything the bench and its
// reports know of it. Each lives in one file of this package that
// registers it from init (correct.go, etcdlock.go, ...): adding a lock is
// that one file, and TestRegistryTraits (package bench) fails when a
// registration lacks a trait the reports need.
type Lock struct {
	// Name is the name used in -impls and in the results.
	Name string
	// Nodes is the number of servers the lock uses: 1, or 5 for Redlock.
	Nodes int
	// Naive marks a deliberately unsafe lock: it runs only when named in
	// -impls and is expected to show violations under contention.
	Naive bool
	// Kind says whose the lock is, for the report: ours (the default),
	// a peer, the floor, or naive (set by register when naive is).
	Kind Kind
	// NoFaults, when set, says why the fault scoreboard cannot run this
	// lock (its faults are Redis servers', proxies on Redis addresses): it
	// is left out of the default -scenarios faults set.
	NoFaults string
	// Connect makes one contending client.
	Connect func(e Env) (Contender, error)
	// KeepsKeys marks a lock that leaves keys behind by design (fencing's
	// token counters): the bench still deletes them after each run but does
	// not report them as leftovers.
	KeepsKeys bool
	// Scenarios, when set, are the only Scenarios the lock runs in (the
	// locks on etcd, ZooKeeper and PostgreSQL skip rtt, whose proxies sit
	// in front of the Redis servers only).
	Scenarios []string
	// GaveUp reports whether an error from Lock is the lock's "gave up"
	// outcome (counted, then retried with the same start of the wait)
	// rather than a transport or other failure.
	GaveUp func(err error) bool
	// Claims says, per fault schedule id, what the lock Claims to survive
	// or names as a fault it does not (Claims.go); the fault scoreboard
	// checks every run against it.
	Claims Claims
	// System is what the lock runs on: SysRedis (the default, set by
	// register), SysEtcd, SysZooKeeper or SysPostgres. The fault schedules
	// apply by system.
	System string
	// LossSignal: the lock's Locker says when the lock is lost (a lost()
	// method, read by Lost), as its Done or lease does; the fault
	// scoreboard then reports whether the holder was told before another
	// got in.
	LossSignal bool
	// Transactional: the lock's holder works in the lock's transaction (its
	// Locker is a TxLocker), as the isolation schedule needs.
	Transactional bool
	// NoPipeliner, for a lock on Redis, says why its API takes no go-redis
	// AutoPipeliner (Env.Pipeliners): it makes its own client.
	NoPipeliner string
	// NoCluster, for a lock on one Redis server, says why it cannot run on
	// a Redis Cluster (-addrs cluster://...): the bench leaves it out there.
	NoCluster string
	// Order places the lock in the reports' tables and plots (smaller
	// first: ours, then the peers, then the floors); 0 puts it after every
	// ordered lock, by name.
	Order int
	// Pipelined marks the lock's run on go-redis AutoPipeliners, registered
	// beside every lock on Redis whose NoPipeliner is empty, named after it
	// with PipelinedSuffix (correct@autopipe): its Connect wants
	// Env.Pipeliners set (see Env.OpenPipeliners), and its floor and
	// baseline are the floor's and the baseline's runs on them.
	Pipelined bool
	// PipelinedInDefault: the default plan (make bench, no -client) runs
	// the lock on AutoPipeliners too, in the cells issue 38's comparison
	// needs; -client autopipe runs every lock that has a run on them.
	PipelinedInDefault bool
}

// gaveUpOn returns the gaveUp of a lock whose Lock gives up with
// notObtained (its ErrNotObtained) and no other way.
func gaveUpOn(notObtained error) func(err error) bool {
	return func(err error) bool { return errors.Is(err, notObtained) }
}

// Kind sorts the implementations into the report's groups.
type Kind string

const (
	Ours  Kind = "ours"  // locklab's own locks
	Peer  Kind = "peer"  // other projects' locks
	Floor Kind = "floor" // raw commands, no library: what the machine allows
	Naive Kind = "naive" // deliberately broken
)

// Baseline returns the peer whose same-round figures this impl's ratios are
// computed against: redsync-5 for 5-node locks, redsync-1 otherwise.
func (im *Lock) Baseline() string {
	if im.Nodes > 1 {
		return "redsync-5" + im.suffix()
	}
	return "redsync-1" + im.suffix()
}

// Floor returns the raw Floor for this impl's node count: raw-5 for 5-node
// locks, raw otherwise.
func (im *Lock) Floor() string {
	if im.Nodes > 1 {
		return "raw-5" + im.suffix()
	}
	return "raw" + im.suffix()
}

var Locks = map[string]*Lock{}

// register adds an implementation; it is called from init functions only.
func register(im *Lock) {
	if _, dup := Locks[im.Name]; dup {
		panic("bench: implementation registered twice: " + im.Name)
	}
	if im.Nodes != 1 && im.Nodes != 5 {
		panic("bench: implementation " + im.Name + " wants an unsupported node count")
	}
	if im.System == "" {
		im.System = SysRedis
	}
	switch {
	case im.Naive:
		im.Kind = Naive
	case im.Kind == "":
		im.Kind = Ours
	}
	Locks[im.Name] = im
	if im.System == SysRedis && im.NoPipeliner == "" && !im.Pipelined {
		register(im.onPipeliners())
	}
}

// Sorted returns registered names in display order (naive last).
func Sorted(names []string) []string {
	rank := func(n string) int {
		if im, ok := Locks[n]; ok && im.Order > 0 {
			return im.Order
		}
		return math.MaxInt
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

// Default returns every registered safe implementation on its own
// clients (the runs on AutoPipeliners are asked for by name, or with
// OnPipeliners).
func Default() []string {
	var names []string
	for n, im := range Locks {
		if !im.Naive && !im.Pipelined {
			names = append(names, n)
		}
	}
	return Sorted(names)
}

// Resolve turns the -impls list into implementations. An entry may be
// a glob ("naive-*"), which matches the locks on their own clients only
// (correct* is not correct@autopipe, which its exact name selects); an
// empty list means every safe implementation.
func Resolve(list []string) ([]*Lock, error) {
	if len(list) == 0 {
		list = Default()
	}
	var all []string
	for n, im := range Locks {
		if !im.Pipelined {
			all = append(all, n)
		}
	}
	all = Sorted(all)
	var out []*Lock
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
		} else if _, ok := Locks[want]; ok {
			matched = []string{want}
		}
		if len(matched) == 0 {
			return nil, fmt.Errorf("-impls: unknown implementation %q; available: %s", want, strings.Join(all, ", "))
		}
		for _, n := range matched {
			if !seen[n] {
				seen[n] = true
				out = append(out, Locks[n])
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
// ctx ended while lock waited, ctx's error is returned (its deadline, say,
// rather than the hold context's cancellation that lock saw); if lock
// succeeded all the same, release is called first. The returned function
// ends the hold context; call it after unlocking.
func holdPast(ctx context.Context, lock func(context.Context) error, release func()) (context.CancelFunc, error) {
	hold, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	err := lock(hold)
	if !stop() { // ctx ended during the wait: hold is cancelled too
		if err == nil {
			release()
		}
		if err == nil || errors.Is(err, context.Canceled) {
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
