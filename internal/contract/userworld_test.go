package contract_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/fencing"
	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/internal/locktest"
)

// The six Redis locks under the user-world fault suite that the locks on
// etcd, ZooKeeper and PostgreSQL go through (locktest.UserWorld), judged
// by the same checks: this file says only how to make each fault with the
// RESP fault proxy. The sweeps in contract_test.go go further on Redis
// (every reply lost in turn); this suite is what all nine share.

// rconn is one party's connection to the lock's nodes: a client per node,
// through a proxy per node for the faulty one, and the party's Notifier
// for queued kinds.
type rconn struct {
	clients  []*redis.Client
	proxies  []*faultproxy.Proxy // nil for a clean connection
	notifier any
	key      string     // the key of the last lock made on it: what a fault matches
	t        *testing.T // the test it was made for
}

// uwLock is a Redis lock as locktest sees it: a Fence (fencing's token, 0
// for the others), and Done and Until where the lock has them.
type uwLock struct{ locker }

func (l uwLock) Fence() uint64 {
	if m, ok := l.locker.(*fencing.Mutex); ok {
		return uint64(m.Token())
	}
	return 0
}

func (l uwLock) Done() <-chan struct{} {
	if d, ok := l.locker.(interface{ Done() <-chan struct{} }); ok {
		return d.Done()
	}
	return nil // never closes: the lock has no lost-lease signal
}

func (l uwLock) Until() time.Time {
	if u, ok := l.locker.(interface{ Until() time.Time }); ok {
		return u.Until()
	}
	return time.Now().Add(time.Hour) // the lock does not say
}

// uwTTL is the locks' lease in the suite: far longer than Recover, so a
// key a fault leaves behind shows as a stall, not as a wait.
const uwTTL = longTTL

func TestUserWorld(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			k.skipPending(t)
			conn := func(t *testing.T, ps []*faultproxy.Proxy) *rconn {
				f := user
				if ps != nil && strings.Contains(t.Name(), strings.ReplaceAll(noRetries, " ", "_")) {
					f = strict
				}
				c := &rconn{clients: partyClients(t, k, f, ps), proxies: ps, t: t}
				if k.notifier != nil {
					c.notifier = k.notifier(t, c.clients)
				}
				return c
			}
			lk := locktest.Kind[*rconn]{
				Name: k.name,
				Conn: func(t *testing.T) *rconn { return conn(t, nil) },
				New: func(c *rconn, key string, o locktest.Options) locktest.Fenced {
					c.key = key
					hook := o.Hook
					if hook == nil {
						hook = func(context.Context, string) {}
					}
					l := k.make(c.t, env{clients: c.clients, key: key, ttl: uwTTL, hook: hook, notifier: c.notifier, ownRetry: true})
					// Before the test's check that nothing is left: redlock's
					// releases to a minority may still be in flight.
					c.t.Cleanup(func() { settle(context.Background(), l) })
					return uwLock{l}
				},
				ErrNotHeld:     k.errNotHeld,
				ErrNotObtained: k.errNotObtained,
				HookClaimed:    k.queuedHook,
				Waiting:        refusedOnce,
				Fenceless:      k.name != "fencing",
			}
			// Load the lock's scripts into the servers first, so that a
			// fault on "the release's EVALSHA" loses the release's reply,
			// not a NOSCRIPT error go-redis would answer with an EVAL.
			warm := lk.Conn(t)
			locktest.Warm(t, t.Context(), lk.New(warm, newKey(t, k), locktest.Options{}))
			w := locktest.World[*rconn]{
				// a's connection has passed the lock's server check (the
				// preflight probe, remembered per server) before a fault is
				// armed: "the first command on the key" is then the
				// lock's own, not the probe's.
				Faulty: func(t *testing.T) *rconn {
					c := conn(t, proxiesFor(t, k))
					locktest.Warm(t, t.Context(), lk.New(c, newKey(t, k), locktest.Options{}))
					return c
				},
				Faults:  redisFaults(),
				Call:    2 * time.Second,
				Recover: 4 * time.Second,
			}
			locktest.UserWorld(t, lk, w, func(t testing.TB) string { return newKey(t.(*testing.T), k) })
		})
	}
}

// refusedOnce is the user-world suite's Waiting for a Redis lock: a
// polling Lock waits between tries, so its second command on the key
// through a's first proxy means the first was refused.
func refusedOnce(t *testing.T, c *rconn, key string) func(context.Context) error {
	r := c.proxies[0].Count(faultproxy.Match{Key: key})
	t.Cleanup(r.Remove)
	return func(ctx context.Context) error { return r.Wait(ctx, 2) }
}

// onEvery makes a rule on every node's proxy.
func onEvery(c *rconn, rule func(p *faultproxy.Proxy) *faultproxy.Rule) []*faultproxy.Rule {
	rs := make([]*faultproxy.Rule, len(c.proxies))
	for i, p := range c.proxies {
		rs[i] = rule(p)
	}
	return rs
}

// partition holds every command a sends on the key, on every node, and
// returns the heal: it delivers a's first held command on each node and
// then the rest, or, firstLast, the rest and then the first.
func partition(t *testing.T, c *rconn, firstLast bool) func() {
	onKey := faultproxy.Match{Key: c.key}
	first := onEvery(c, func(p *faultproxy.Proxy) *faultproxy.Rule { return p.Hold(onKey, 1) })
	rest := onEvery(c, func(p *faultproxy.Proxy) *faultproxy.Rule { return p.Hold(onKey, 0) })
	return func() {
		if firstLast {
			first, rest = rest, first
		}
		deliver(t, first)
		deliver(t, rest)
	}
}

// deliver removes rules, releasing what they hold, and waits (up to 5s)
// until the server has answered every command they held.
func deliver(t *testing.T, rs []*faultproxy.Rule) {
	removeAll(rs)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, r := range rs {
		if r.Hits() > 0 {
			if err := r.Answered(ctx, r.Hits()); err != nil {
				t.Logf("held commands not all answered after the heal: %v", err)
			}
		}
	}
}

// removeAll removes rules, releasing what they hold.
func removeAll(rs []*faultproxy.Rule) {
	for _, r := range rs {
		r.Remove()
	}
}

// noRetries, in a fault's name, gives a a client that never sends a
// command again (the rig's options), instead of go-redis's defaults: the
// lost reply reaches the lock as an error.
const noRetries = "no retries"

func redisFaults() []locktest.Fault[*rconn] {
	onKey := func(c *rconn) faultproxy.Match { return faultproxy.Match{Key: c.key} }
	return []locktest.Fault[*rconn]{
		{
			// The first command on the lock's key (the SET, or the acquire
			// script) runs, its reply is lost, go-redis sends it again.
			Name: "acquire reply lost", During: locktest.DuringLock,
			Inject: func(t *testing.T, c *rconn) func() {
				rs := onEvery(c, func(p *faultproxy.Proxy) *faultproxy.Rule { return p.DropReply(onKey(c), 1) })
				return func() { removeAll(rs) }
			},
		},
		{
			// As above, on a client that does not send it again: the lock
			// sees the error.
			Name: "acquire reply lost, " + noRetries, During: locktest.DuringLock,
			Inject: func(t *testing.T, c *rconn) func() {
				rs := onEvery(c, func(p *faultproxy.Proxy) *faultproxy.Rule { return p.DropReply(onKey(c), 1) })
				return func() { removeAll(rs) }
			},
		},
		{
			// The release script runs, its reply is lost, and the client
			// does not send it again: Unlock fails, the key is gone.
			Name: "release reply lost, " + noRetries, During: locktest.DuringUnlock,
			Inject: func(t *testing.T, c *rconn) func() {
				rs := onEvery(c, func(p *faultproxy.Proxy) *faultproxy.Rule {
					return p.DropReply(faultproxy.Match{Command: "EVALSHA", Key: c.key}, 1)
				})
				return func() { removeAll(rs) }
			},
		},
		{
			// The release script runs, its reply is lost, go-redis sends it
			// again: the second run must not turn into ErrNotHeld.
			Name: "release reply lost", During: locktest.DuringUnlock,
			Inject: func(t *testing.T, c *rconn) func() {
				rs := onEvery(c, func(p *faultproxy.Proxy) *faultproxy.Rule {
					return p.DropReply(faultproxy.Match{Command: "EVALSHA", Key: c.key}, 1)
				})
				return func() { removeAll(rs) }
			},
		},
		{
			// Every command a's process sends on the key vanishes (a
			// partition) while its Lock runs, past the call's deadline; then
			// the partition heals and the held commands land late. The heal
			// delivers them in one order and then the other, for the
			// network may choose either: on every node, the first command
			// a sent (its take of the key) lands first, and its give-up's
			// release after it must free the key; or everything a sent
			// after its first command lands first (the release finds
			// nothing to release), and then that first command, which must
			// not take the key back for nobody.
			// Not on TryLock: a TryLock is a Lock's first attempt (the
			// same command, and the same release of its token when it
			// fails), which the partition hits from its start; its runs
			// cost 2-20s each on every kind (the give-up's wait).
			Name: "partition past the give-up, delivered late in order", During: locktest.DuringLock, NotOnTryLock: true,
			Inject: func(t *testing.T, c *rconn) func() { return partition(t, c, false) },
		},
		{
			Name: "partition past the give-up, the first command delivered last", During: locktest.DuringLock, NotOnTryLock: true,
			Inject: func(t *testing.T, c *rconn) func() { return partition(t, c, true) },
		},
		{
			// a's connections reset while it waits in line (its Notifier's
			// subscription too).
			Name: "connections reset", During: locktest.DuringWait,
			Inject: func(t *testing.T, c *rconn) func() {
				for _, p := range c.proxies {
					p.Reset()
				}
				return func() {
					for _, p := range c.proxies {
						p.Heal()
					}
				}
			},
		},
	}
}
