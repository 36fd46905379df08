package contract_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/internal/keyslot"
	"github.com/locklab/locklab/internal/locktest"
	"github.com/locklab/locklab/internal/retry"
	"github.com/locklab/locklab/internal/rig"
)

// servers are the nodes every test shares; keys keep tests apart.
var servers []*rig.Node

func TestMain(m *testing.M) {
	rig.Main(m, 3, func(nodes []*rig.Node) { servers = nodes })
}

// maxSteps bounds a sweep: no scenario sends more commands than this.
const maxSteps = 60

// longTTL is the lease of every party unless a scenario says otherwise:
// long enough that no key expires while a test runs, however loaded the
// machine, so that whatever stalls is a fault of the lock, not the clock.
const longTTL = 20 * time.Second

// opTimeout bounds each operation of a scenario: hundreds of times what
// one takes (with go-redis's retries and their backoff), and a quarter of
// longTTL, so that an operation that waits for a key to expire (its own
// key, left behind by a lost reply) fails instead of passing slowly.
const opTimeout = longTTL / 4

// op returns a context for one operation of a scenario.
func op(ctx context.Context) context.Context {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	context.AfterFunc(ctx, cancel)
	return ctx
}

var keySeq atomic.Int64

// newKey returns a fresh key for kind k, and checks in Cleanup that the
// test left nothing behind: the lock key gone from every node, and every
// key kept beside it (queue, receipts, counter) with a TTL.
func newKey(t *testing.T, k kind) string {
	t.Helper()
	key := fmt.Sprintf("contract:%s:%d", k.name, keySeq.Add(1))
	t.Cleanup(func() {
		if t.Failed() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, n := range servers[:k.nodes] {
			c := redis.NewClient(rig.ClientOptions(n.Addr()))
			for _, pattern := range []string{key + "*", keyslot.Base(key) + "*"} {
				iter := c.Scan(ctx, 0, pattern, 100).Iterator()
				for iter.Next(ctx) {
					left := iter.Val()
					if left == key {
						// What it holds and how long it has left say who wrote it
						// and when: a queue token ("<notifier>.<ttl>.<random>.<gen>")
						// or a SET round's, and PTTL against the TTL.
						t.Errorf("%s: the lock key %s is left on %s after every party unlocked: it holds %q, PTTL %v",
							k.name, key, n.Addr(), c.Get(ctx, key).Val(), c.PTTL(ctx, key).Val())
						continue
					}
					// PTTL -1: no TTL; -2: gone since SCAN saw it (a receipt
					// expiring now), which is fine.
					if ttl := c.PTTL(ctx, left).Val(); ttl == -1 && !k.keeps(left) {
						t.Errorf("%s: key %s left on %s with no TTL (PTTL %v)", k.name, left, n.Addr(), ttl)
					}
				}
				if err := iter.Err(); err != nil {
					t.Errorf("SCAN %s: %v", pattern, err)
				}
			}
			_ = c.Close()
		}
	})
	return key
}

// flavour is how a party's clients are made.
type flavour int

const (
	// user: go-redis's own defaults, retries on.
	user flavour = iota
	// strict: the rig's options, no retries, context deadlines honoured.
	strict
)

func (f flavour) String() string { return [...]string{"default options", "no retries"}[f] }

// party is one client of the lock: its own connections, as a separate
// process would have.
type party struct {
	name string
	lock locker
	// queued is closed when the party's Lock has joined the queue (for
	// kinds whose Lock queues).
	queued    chan struct{}
	queueOnce sync.Once
	// notifier is the party's process's Notifier (queued kinds).
	notifier any
	// at, when set before the party's first Lock, is called at every hook
	// point (after queued is closed).
	at func(point string)
}

// newParty makes a party for kind k on key. Through proxies (one per node)
// when given, directly to the servers otherwise. opts adjust the lock's
// env.
func newParty(t *testing.T, k kind, name, key string, ttl time.Duration, f flavour, proxies []*faultproxy.Proxy, opts ...func(*env)) *party {
	t.Helper()
	clients := partyClients(t, k, f, proxies)
	var n any
	if k.notifier != nil {
		n = k.notifier(t, clients)
	}
	return partyOn(t, k, name, key, ttl, clients, n, opts...)
}

// partyClients makes one client per node of kind k, through proxies when
// given.
func partyClients(t *testing.T, k kind, f flavour, proxies []*faultproxy.Proxy) []*redis.Client {
	t.Helper()
	clients := make([]*redis.Client, k.nodes)
	for i := range clients {
		addr := servers[i].Addr()
		if proxies != nil {
			addr = proxies[i].Addr()
		}
		o := rig.UserOptions(addr)
		if f == strict {
			o = rig.ClientOptions(addr)
		}
		c := redis.NewClient(o)
		t.Cleanup(func() { _ = c.Close() })
		clients[i] = c
		if k.pipelined {
			pipeline(t, c)
		}
	}
	return clients
}

// partyOn makes a party whose lock uses clients and, for queued kinds, the
// Notifier n: parties made on the same ones share a process. opts adjust
// the lock's env.
func partyOn(t *testing.T, k kind, name, key string, ttl time.Duration, clients []*redis.Client, n any, opts ...func(*env)) *party {
	t.Helper()
	p := &party{name: name, queued: make(chan struct{}), notifier: n}
	hook := func(_ context.Context, point string) {
		if point == k.queuedHook {
			p.queueOnce.Do(func() { close(p.queued) })
		}
		if p.at != nil {
			p.at(point)
		}
	}
	e := env{clients: clients, key: key, ttl: ttl, hook: hook, notifier: n}
	for _, o := range opts {
		o(&e)
	}
	p.lock = k.make(t, e)
	return p
}

// sharedParties returns a maker of parties with TTL ttl that share one
// process's clients (go-redis defaults) and Notifier.
func sharedParties(t *testing.T, k kind, key string, ttl time.Duration, opts ...func(*env)) func(name string) *party {
	t.Helper()
	clients := partyClients(t, k, user, nil)
	var n any
	if k.notifier != nil {
		n = k.notifier(t, clients)
	}
	return func(name string) *party { return partyOn(t, k, name, key, ttl, clients, n, opts...) }
}

// proxiesFor starts one fault proxy per node of kind k.
func proxiesFor(t *testing.T, k kind) []*faultproxy.Proxy {
	t.Helper()
	ps := make([]*faultproxy.Proxy, k.nodes)
	for i := range ps {
		ps[i] = faultproxy.Start(t, servers[i].Addr())
	}
	return ps
}

// lossAt loses the reply of the command at index step (0 for the first)
// that the parties behind ps send to node 0.
func lossAt(ps []*faultproxy.Proxy, step int) *faultproxy.Rule {
	return ps[0].DropReply(faultproxy.Match{}, 1).After(step)
}

// settle waits for commands a lock still has in flight (redlock returns at
// a majority).
func settle(ctx context.Context, l locker) {
	if s, ok := l.(interface{ Settle(context.Context) error }); ok {
		_ = s.Settle(ctx)
	}
}

// sweep runs scenario once for every command it sends to node 0, losing
// that command's reply, until a run sends fewer commands than the step.
func sweep(t *testing.T, k kind, scenario func(t *testing.T, step int) *faultproxy.Rule) {
	t.Helper()
	for step := range maxSteps {
		var fired bool
		ok := t.Run(fmt.Sprintf("lose-%d", step), func(t *testing.T) {
			var rule *faultproxy.Rule
			defer func() {
				// Also when the scenario stopped the test early.
				fired = rule == nil || rule.Hits() > 0
			}()
			rule = scenario(t, step)
			if rule.Hits() == 0 {
				t.Skip("the scenario sent fewer commands: sweep done")
			}
		})
		if !fired {
			if step == 0 {
				t.Fatalf("%s: no reply was lost at step 0: harness went blind", k.name)
			}
			return
		}
		if !ok {
			return // the first failing step says enough
		}
	}
	t.Fatalf("%s: the scenario sends more than %d commands", k.name, maxSteps)
}

// lost names what a rule made lose, for failure messages.
func lost(r *faultproxy.Rule) string {
	if c := r.Caught(); len(c) > 0 {
		return "after the reply to " + strings.Join(c, ", ") + " was lost"
	}
	return "with no reply lost"
}

// TestEachReplyLostDefaultOptions is the heart of the contract: users run
// go-redis on its defaults, which send a command again when its reply is
// lost. Every operation must then still give the answer it would have
// given, and the lock must stay exclusive and free itself on Unlock.
func TestEachReplyLostDefaultOptions(t *testing.T) {
	forKinds(t, anyKind, func(t *testing.T, k kind) {
		sweep(t, k, func(t *testing.T, step int) *faultproxy.Rule {
			return sequence(t, k, step, user)
		})
	})
}

// TestEachReplyLostNoRetries: a client that never retries sees the lost
// reply as an error. The operation may fail; nothing may stall.
func TestEachReplyLostNoRetries(t *testing.T) {
	forKinds(t, anyKind, func(t *testing.T, k kind) {
		sweep(t, k, func(t *testing.T, step int) *faultproxy.Rule {
			return sequence(t, k, step, strict)
		})
	})
}

// sequence is one party's life: lock, (lock again, unlock, for a reentrant
// kind), extend, unlock, with an observer that must be refused while the
// party holds the lock and must get it at once after.
func sequence(t *testing.T, k kind, step int, f flavour) *faultproxy.Rule {
	ctx, key, ps, rule := lossScene(t, k, step)
	a := newParty(t, k, "A", key, longTTL, f, ps)
	b := newParty(t, k, "B", key, longTTL, strict, nil)
	settleAtEnd(t, a, b)

	check := func(what string, err error) bool {
		t.Helper()
		if err == nil {
			return true
		}
		if f == user {
			t.Errorf("%s: A's %s = %v %s; want nil (the client sent the command again)", k.name, what, err, lost(rule))
		}
		return false
	}
	refused := func(when string) {
		t.Helper()
		if ok, err := b.lock.TryLock(op(ctx)); ok || err != nil {
			t.Errorf("%s: B's TryLock %s = %v, %v %s; want false, nil", k.name, when, ok, err, lost(rule))
			if ok {
				_ = b.lock.Unlock(ctx)
			}
		}
	}

	held := check("Lock", a.lock.Lock(op(ctx)))
	if held {
		refused("while A holds the lock")
		if k.reentrant {
			if check("second Lock", a.lock.Lock(op(ctx))) {
				check("inner Unlock", a.lock.Unlock(op(ctx)))
				refused("after A's inner Unlock")
			}
		}
		if e, ok := a.lock.(interface {
			Extend(context.Context, time.Duration) error
		}); ok {
			check("Extend", e.Extend(op(ctx), longTTL))
			refused("after A's Extend")
		}
		if !check("Unlock", a.lock.Unlock(op(ctx))) && f == strict {
			// Without retries the outcome is unknown; a careful caller
			// tries once more, and must find either "done" or "not held".
			_ = a.lock.Unlock(op(ctx))
		}
	}
	// Whatever A saw, the lock must now be free: nobody waits for a TTL.
	checkFree(t, ctx, k, b, "after A unlocked", rule)
	return rule
}

// lossScene begins one step of a sweep for kind k: a context of 30s, a
// fresh key, a proxy in front of each node, and the rule that loses the
// reply of the step-th command through them.
func lossScene(t *testing.T, k kind, step int) (ctx context.Context, key string, ps []*faultproxy.Proxy, rule *faultproxy.Rule) {
	t.Helper()
	ctx = locktest.Context(t)
	key = newKey(t, k)
	ps = proxiesFor(t, k)
	return ctx, key, ps, lossAt(ps, step)
}

// settleAtEnd waits, when the test ends and before its key is checked,
// for the commands the parties' locks still have in flight (redlock
// returns at a majority), party by party.
func settleAtEnd(t *testing.T, parties ...*party) {
	t.Cleanup(func() {
		for _, p := range parties {
			settle(context.Background(), p.lock)
		}
	})
}

// checkFree fails the test unless B gets the lock at once, when, and lets
// it go: nobody waits for a TTL.
func checkFree(t *testing.T, ctx context.Context, k kind, b *party, when string, rule *faultproxy.Rule) {
	t.Helper()
	if ok, err := b.lock.TryLock(op(ctx)); !ok || err != nil {
		t.Errorf("%s: B's TryLock %s = %v, %v %s; want true, nil (the key is held for nothing)", k.name, when, ok, err, lost(rule))
	} else if err := b.lock.Unlock(ctx); err != nil {
		t.Errorf("%s: B's Unlock = %v", k.name, err)
	}
}

// TestHandOffEachReplyLost: A holds the lock, W1 and W2 wait in the queue,
// W2 with a shorter TTL. A's Unlock hands the lock to W1, W1's to W2. Any
// reply of the three may be lost and sent again: a re-sent hand-off must
// not pop the next waiter or give W1's key W2's TTL, a re-sent join must
// not queue a waiter twice.
func TestHandOffEachReplyLost(t *testing.T) {
	forQueued(t, func(t *testing.T, k kind) {
		sweep(t, k, func(t *testing.T, step int) *faultproxy.Rule { return handOff(t, k, step) })
	})
}

const shortTTL = 3 * time.Second

func handOff(t *testing.T, k kind, step int) *faultproxy.Rule {
	ctx, key, ps, rule := lossScene(t, k, step)
	a := newParty(t, k, "A", key, longTTL, user, ps)
	w1 := newParty(t, k, "W1", key, longTTL, user, ps)
	w2 := newParty(t, k, "W2", key, shortTTL, user, ps)
	b := newParty(t, k, "B", key, longTTL, strict, nil)
	admin := servers[0].Client()
	settleAtEnd(t, a, w1, w2, b)

	if err := a.lock.Lock(op(ctx)); err != nil {
		t.Fatalf("%s: A's Lock = %v %s", k.name, err, lost(rule))
	}
	got1 := queueUp(t, ctx, w1)
	got2 := queueUp(t, ctx, w2) // behind W1, which is queued

	if err := a.lock.Unlock(op(ctx)); err != nil {
		t.Errorf("%s: A's Unlock (a hand-off) = %v %s; want nil", k.name, err, lost(rule))
	}
	if err := wait(op(ctx), got1); err != nil {
		t.Fatalf("%s: W1's Lock = %v %s; want nil (it was first in the queue)\n%s", k.name, err, lost(rule), dump(k, key))
	}
	select {
	case err := <-got2:
		t.Fatalf("%s: W2's Lock returned %v while W1 holds the lock %s; want it still waiting", k.name, err, lost(rule))
	default:
	}
	// W1's key must carry W1's lease, not W2's shorter one.
	if pttl := admin.PTTL(ctx, key).Val(); pttl <= shortTTL {
		t.Errorf("%s: W1 holds the lock but its key expires in %v, W2's TTL %s; want about %v", k.name, pttl, lost(rule), longTTL)
	}
	if ok, err := b.lock.TryLock(ctx); ok || err != nil {
		t.Errorf("%s: B's TryLock while W1 holds = %v, %v %s; want false, nil", k.name, ok, err, lost(rule))
	}
	if err := w1.lock.Unlock(ctx); err != nil {
		t.Errorf("%s: W1's Unlock = %v %s; want nil", k.name, err, lost(rule))
	}
	if err := wait(op(ctx), got2); err != nil {
		t.Fatalf("%s: W2's Lock = %v %s; want nil", k.name, err, lost(rule))
	}
	if err := w2.lock.Unlock(ctx); err != nil {
		t.Errorf("%s: W2's Unlock = %v %s; want nil", k.name, err, lost(rule))
	}
	checkFree(t, ctx, k, b, "after everyone unlocked", rule)
	return rule
}

// TestAbandonEachReplyLost: W gives up while queued (its context is
// cancelled). Its Lock must say so, and A's Unlock must then leave the
// lock free for B at once, not hand it to W's leftovers.
func TestAbandonEachReplyLost(t *testing.T) {
	forQueued(t, func(t *testing.T, k kind) {
		sweep(t, k, func(t *testing.T, step int) *faultproxy.Rule {
			ctx, key, ps, rule := lossScene(t, k, step)
			a := newParty(t, k, "A", key, longTTL, user, ps)
			w := newParty(t, k, "W", key, longTTL, user, ps)
			b := newParty(t, k, "B", key, longTTL, strict, nil)
			settleAtEnd(t, a, w, b)
			if err := a.lock.Lock(ctx); err != nil {
				t.Fatalf("%s: A's Lock = %v %s", k.name, err, lost(rule))
			}
			wctx, giveUp := context.WithCancel(ctx)
			got := queueUp(t, wctx, w)
			giveUp()
			if err := wait(op(ctx), got); !errors.Is(err, context.Canceled) {
				t.Errorf("%s: W's Lock after its context was cancelled = %v %s; want an error wrapping context.Canceled", k.name, err, lost(rule))
			}
			if err := a.lock.Unlock(ctx); err != nil {
				t.Errorf("%s: A's Unlock = %v %s; want nil", k.name, err, lost(rule))
			}
			checkFree(t, ctx, k, b, "after A unlocked, W gone", rule)
			return rule
		})
	})
}

// TestExclusiveWithRepliesLost: four parties, each behind its own proxies
// losing every fifth reply, take the lock in turn. Never two at once.
func TestExclusiveWithRepliesLost(t *testing.T) {
	const parties, rounds = 4, 15
	forKinds(t, anyKind, func(t *testing.T, k kind) {
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		key := newKey(t, k)
		var locks []locker
		for i := range parties { // lock i is party P<i>'s
			ps := proxiesFor(t, k)
			for j, p := range ps {
				p.DropReply(faultproxy.Match{}, 0).After(i + j).Every(5)
			}
			locks = append(locks, newParty(t, k, fmt.Sprint("P", i), key, longTTL, user, ps).lock)
		}
		most, total, err := locktest.Turns(ctx, locks, rounds, 0)
		for _, l := range locks {
			settle(context.Background(), l)
		}
		if err != nil {
			t.Fatalf("%s: %v", k.name, err)
		}
		if most > 1 {
			t.Errorf("%s: %d holders at once with every fifth reply lost; want 1", k.name, most)
		}
		if total != parties*rounds {
			t.Errorf("%s: %d rounds done; want %d", k.name, total, parties*rounds)
		}
	})
}

// dump describes the lock's keys on every node, for failure messages.
func dump(k kind, key string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var b strings.Builder
	for i, n := range servers[:k.nodes] {
		c := redis.NewClient(rig.ClientOptions(n.Addr()))
		base := keyslot.Base(key)
		fmt.Fprintf(&b, "node %d: %s = %q (PTTL %v); queue %v\n", i, key, c.Get(ctx, key).Val(), c.PTTL(ctx, key).Val(),
			append(c.LRange(ctx, base+":q", 0, -1).Val(), c.ZRange(ctx, base+":q", 0, -1).Val()...))
		_ = c.Close()
	}
	return b.String()
}

// lockAsync runs p's Lock in a goroutine and returns its result channel.
func lockAsync(ctx context.Context, p *party) <-chan error {
	got := make(chan error, 1)
	go func() { got <- p.lock.Lock(ctx) }()
	return got
}

// waitQueued waits until p's Lock has joined the queue. It fails the test
// if the Lock returns first.
func waitQueued(t *testing.T, p *party, got <-chan error) {
	t.Helper()
	select {
	case <-p.queued:
	case err := <-got:
		t.Fatalf("%s's Lock returned %v before it queued; want it waiting", p.name, err)
	case <-time.After(10 * time.Second):
		t.Fatalf("%s's Lock did not queue within 10s", p.name)
	}
}

func wait(ctx context.Context, got <-chan error) error {
	select {
	case err := <-got:
		return err
	case <-ctx.Done():
		return fmt.Errorf("still waiting: %w", ctx.Err())
	}
}

var _ = retry.ReceiptTTL
