package redlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/args"
	"github.com/locklab/locklab/internal/keyslot"
	"github.com/locklab/locklab/internal/pubsub"
	"github.com/locklab/locklab/internal/retry"
	"github.com/locklab/locklab/internal/token"
)

// channelPrefix starts every Notifier's channel name. The scripts spell
// it out too (release.lua, acquire.lua); a test checks that they agree.
const channelPrefix = "redlock:w:"

// subscribeGrace is how long NewNotifier waits for the remaining
// subscriptions once a majority is confirmed.
const subscribeGrace = 250 * time.Millisecond

// NotifyClient is what a [Notifier] needs from a go-redis client of one
// node: a Pub/Sub subscription, and scripts, to pass on a node handed to a
// waiter that has gone. *redis.Client implements it.
type NotifyClient interface {
	redis.Scripter
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
}

// errNotifierClosed is joined to ErrNotObtained when a Notifier is closed
// under a waiting Lock.
var errNotifierClosed = errors.New("redlock: notifier closed")

// A Notifier lets Mutexes that use it ([WithNotifier]) wait for a lock in
// a fair queue on every node, without polling: a holder's Unlock hands each
// node straight to the best waiter there and tells that waiter through its
// Notifier. Create one per process (or per set of nodes), share it between
// Mutexes on any number of keys of those nodes, and Close it when done.
//
// A Notifier subscribes once to its own channel on each node, and runs one
// goroutine per node that subscribes, then reads hand-off messages and
// wakes the waiting Lock calls. The goroutines start in [NewNotifier] and
// end in [Notifier.Close]. Each pings its subscription when it has been
// silent for a second, and takes a connection that does not answer within
// 2s more for dead: it subscribes again on a new one and has every waiter
// look at the nodes (while it was down, that node saw nobody listening and
// passed its part of the lock on). A hand-off message for a waiter that no
// longer waits (one that gave up while its join was on the wire) is not
// left to hold that node for a TTL: the Notifier releases it there,
// owner-checked, which hands it to the next waiter.
type Notifier struct {
	id      string         // random; names the channel and starts every waiter's token
	addrs   []string       // addrs[i] is node i's address, or ""
	clients []NotifyClient // clients[i] reaches node i
	done    chan struct{}  // closed by Close: waiting Locks give up
	wg      sync.WaitGroup // the per-node goroutines and bounces

	mu      sync.Mutex      // protects subs, waiters and closed
	subs    []*redis.PubSub // subs[i] is nil until node i's goroutine has subscribed
	waiters map[string]*registration
	entered map[string]int // per lock key: this Notifier's Locks in for it (see enter)
	closed  bool
}

// NewNotifier subscribes to a fresh channel on every node behind clients,
// given in the same order as to [New], and starts the goroutines that
// deliver hand-offs. It returns once every subscription is confirmed, or
// once a majority is and the others have had 250ms more (a frozen node
// must not hang it); those go on subscribing in the background. It returns
// an error if clients is invalid (empty, a nil client, one node twice), or
// if a majority of the subscriptions fail or are not confirmed before ctx
// ends.
func NewNotifier(ctx context.Context, clients []NotifyClient) (*Notifier, error) {
	if len(clients) == 0 {
		return nil, invalid("NewNotifier: no clients")
	}
	addrs := make([]string, len(clients))
	for i, c := range clients {
		if args.IsNil(c) {
			return nil, invalid("NewNotifier: nil client: clients[%d]", i)
		}
		addrs[i] = addrOf(c)
		if j := slices.Index(addrs[:i], addrs[i]); addrs[i] != "" && j >= 0 {
			return nil, invalid("NewNotifier: clients %d and %d both address %s", j, i, addrs[i])
		}
	}
	n := &Notifier{
		id:      token.New(),
		addrs:   addrs,
		clients: slices.Clone(clients),
		done:    make(chan struct{}),
		subs:    make([]*redis.PubSub, len(clients)),
		waiters: map[string]*registration{},
		entered: map[string]int{},
	}
	confirmations := make(chan error, len(clients)) // room for all: no goroutine blocks
	for i, c := range clients {
		n.wg.Go(func() { n.run(i, c, confirmations) })
	}
	quorum := len(clients)/2 + 1
	var failed []error
	var grace <-chan time.Time
	ok := 0
wait:
	for answered := 0; answered < len(clients) && len(failed) <= len(clients)-quorum; {
		select {
		case err := <-confirmations:
			answered++
			if err != nil {
				failed = append(failed, err)
			} else if ok++; ok == quorum && answered < len(clients) {
				grace = time.After(subscribeGrace)
			}
		case <-grace:
			break wait
		case <-ctx.Done():
			failed = append(failed, ctx.Err())
			break wait
		}
	}
	if ok < quorum {
		_ = n.Close()
		head := fmt.Errorf("redlock: notifier: subscribed on %d of %d nodes: %w", ok, len(clients), ErrQuorumUnreachable)
		return nil, errors.Join(append([]error{head}, failed...)...)
	}
	return n, nil
}

// Close ends the subscriptions and waits for the Notifier's goroutines to
// exit: at once, except for a goroutine still making its connection to a
// node that does not answer, which ends at that client's read or dial
// timeout. Lock calls still waiting give up with [ErrNotObtained] (they
// leave the queues first). It is safe to call more than once.
func (n *Notifier) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		n.wg.Wait()
		return nil
	}
	n.closed = true
	close(n.done)
	subs := slices.Clone(n.subs)
	n.mu.Unlock()
	var errs []error
	for _, ps := range subs {
		if ps != nil {
			if err := ps.Close(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	n.wg.Wait()
	return errors.Join(errs...)
}

// run is node i's goroutine: it subscribes, reports the confirmation (nil,
// or a *NodeError), then delivers hand-off messages until Close, keeping
// the subscription alive: [pubsub.Read] reads it, and [pubsub.Resubscribe]
// replaces it when it dies (the Notifier then has every waiter look at the
// nodes, as messages were lost meanwhile).
func (n *Notifier) run(i int, c NotifyClient, confirmed chan<- error) {
	sub := pubsub.Sub{
		Subscribe:    func(ctx context.Context) *redis.PubSub { return c.Subscribe(ctx, channelPrefix+n.id) },
		Adopt:        func(ps *redis.PubSub) bool { return n.setSub(i, ps) },
		Done:         n.done,
		Resubscribed: n.lookAll,
	}
	resubscribe := func(old *redis.PubSub) *redis.PubSub { return pubsub.Resubscribe(old, sub) }
	ps := sub.Subscribe(context.Background())
	if !n.setSub(i, ps) {
		_ = ps.Close()
		confirmed <- &NodeError{Index: i, Addr: n.addrs[i], Err: errNotifierClosed}
		return
	}
	// A message published before the subscription is confirmed would be
	// lost: NewNotifier returns, and Mutexes queue, only after a majority.
	if _, err := ps.Receive(context.Background()); err != nil {
		confirmed <- &NodeError{Index: i, Addr: n.addrs[i], Err: err}
		if ps = resubscribe(ps); ps == nil {
			return
		}
	} else {
		confirmed <- nil
	}
	pubsub.Read(ps, n.isClosed, func(payload string) { n.route(i, payload) }, resubscribe)
}

// setSub records node i's subscription; it reports false when the
// Notifier is closed.
func (n *Notifier) setSub(i int, ps *redis.PubSub) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return false
	}
	n.subs[i] = ps
	return true
}

func (n *Notifier) isClosed() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.closed
}

// lookAll has every waiter run a round now: a subscription was down, and
// releases may have passed it by.
func (n *Notifier) lookAll() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, r := range n.waiters {
		r.look()
	}
}

// route handles a hand-off message from node i, "<token>\n<key>": it
// records the hand-off if the token is the current one of a registered
// waiter, and otherwise releases the node for that token, which hands it
// on: the waiter has gone, or retired that token in a later round (a round
// that timed out on a node can leave an old token queued there), so nobody
// would count that node until its TTL ran out.
func (n *Notifier) route(i int, payload string) {
	tok, key, ok := strings.Cut(payload, "\n")
	if !ok {
		return
	}
	dot := strings.LastIndexByte(tok, '.')
	if dot < 0 {
		return
	}
	gen, err := strconv.Atoi(tok[dot+1:])
	if err != nil {
		return
	}
	n.mu.Lock()
	r := n.waiters[tok[:dot]]
	held := r != nil && r.held
	bounce := r == nil && !n.closed
	if bounce {
		n.wg.Add(1)
	}
	n.mu.Unlock()
	if r != nil && (held && r.current(gen) || !held && r.handedOver(i, gen)) {
		return // counted, or a node of the lock the waiter holds
	}
	if r != nil {
		// A token the waiter retired (an older generation), or one handed
		// over while the lock is held: nobody will count that node, so
		// pass it on rather than leave it for a TTL.
		n.mu.Lock()
		bounce = !n.closed
		if bounce {
			n.wg.Add(1)
		}
		n.mu.Unlock()
	}
	if bounce {
		var after <-chan struct{}
		if r != nil && !held {
			after = r.previous(i, gen)
		}
		go n.bounce(i, key, tok, after)
	}
}

// bounce releases node i's key if it holds tok: a node handed to a waiter
// of this Notifier that no longer waits, or to a token it retired. The
// release is owner-checked, so a stale message (the node has moved on
// since) changes nothing. With after, it first waits until after is
// closed (see registration.previous), within retry.ReleaseTimeout.
func (n *Notifier) bounce(i int, key, tok string, after <-chan struct{}) {
	defer n.wg.Done()
	ctx, cancel := retry.Detach(context.Background())
	defer cancel()
	if after != nil {
		select {
		case <-after:
		case <-ctx.Done():
		}
	}
	keys := []string{key, queueKey(key), keyslot.Receipt(keyslot.Base(key), tok)}
	_ = releaseScript.Run(ctx, n.clients[i], keys, tok, retry.ReceiptMS, "1").Err()
}

// register returns the registration through which the waiter id will
// learn of hand-offs.
func (n *Notifier) register(id string) (*registration, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, errNotifierClosed
	}
	r := &registration{n: n, quorum: len(n.addrs)/2 + 1, handed: make([]bool, len(n.addrs)), signal: make(chan struct{}, 1), recheck: make(chan struct{}, 1)}
	n.waiters[id] = r
	return r, nil
}

// hold marks the waiter as holding the lock; see route.
func (r *registration) hold() { r.n.mu.Lock(); r.held = true; r.n.mu.Unlock() }

// enter counts a Lock on key in (until the returned leave is called) and
// reports whether another Lock of this Notifier was already in for key:
// trying its SET round or waiting in the queues. A new Lock's SET would
// then be refused (or race the other's), so it joins the queues at once: a
// burst of Locks in one process pays one SET round, not one each.
func (n *Notifier) enter(key string) (others bool, leave func()) {
	n.mu.Lock()
	others = n.entered[key] > 0
	n.entered[key]++
	n.mu.Unlock()
	return others, func() {
		n.mu.Lock()
		if n.entered[key]--; n.entered[key] <= 0 {
			delete(n.entered, key)
		}
		n.mu.Unlock()
	}
}

func (n *Notifier) unregister(id string) {
	n.mu.Lock()
	delete(n.waiters, id)
	n.mu.Unlock()
}

// check returns an error wrapping ErrInvalid unless the Notifier watches
// the nodes at addrs, in that order (where both sides know the address).
func (n *Notifier) check(addrs []string) error {
	if len(n.addrs) != len(addrs) {
		return invalid("the notifier watches %d nodes, the Mutex uses %d", len(n.addrs), len(addrs))
	}
	for i, a := range addrs {
		if a != "" && n.addrs[i] != "" && a != n.addrs[i] {
			return invalid("node %d is %s for the Mutex but %s for the notifier", i, a, n.addrs[i])
		}
	}
	return nil
}

// A registration is one waiting Lock as its Notifier sees it.
type registration struct {
	n       *Notifier
	quorum  int           // hand-offs that make a majority
	signal  chan struct{} // has a value when the waiter should look at handed
	recheck chan struct{} // has a value when the waiter should run a round now

	held bool // the lock is held: messages are old news (see route); guarded by the Notifier's mu

	mu      sync.Mutex    // protects gen, round, handed, count and majorCh
	gen     int           // the generation of the waiter's current token
	round   *attempt      // the round that sent that token
	handed  []bool        // nodes that hold that token: handed it, or took it in the round
	count   int           // how many are true in handed
	majorCh chan struct{} // closed when count reaches quorum (see majority)
}

// handedOver records that node i holds generation gen's token: a hand-off,
// or the reply of the round that sent it. It wakes the
// waiter only at the first hand-off of a generation (to time a split) and
// when a majority is reached, not at every message.
func (r *registration) handedOver(i, gen int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if gen != r.gen {
		return false
	}
	if r.handed[i] {
		return true
	}
	r.handed[i] = true
	r.count++
	if r.count == r.quorum && r.majorCh != nil {
		close(r.majorCh)
	}
	if r.count == 1 || r.count == r.quorum {
		select {
		case r.signal <- struct{}{}:
		default:
		}
	}
	return true
}

// current reports whether gen is the waiter's current generation.
func (r *registration) current(gen int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return gen == r.gen
}

// look asks the waiter to run a round now: a subscription was down, and
// releases may have passed it by.
func (r *registration) look() {
	select {
	case r.recheck <- struct{}{}:
	default:
	}
}

// setGen starts a new generation, sent by round a: hand-offs to older
// tokens no longer count. It is called before the new token is sent
// anywhere.
func (r *registration) setGen(gen int, a *attempt) {
	r.mu.Lock()
	r.gen, r.round = gen, a
	clear(r.handed)
	r.count = 0
	r.majorCh = make(chan struct{})
	r.mu.Unlock()
}

// majority returns a channel closed once a majority of nodes hold the
// current generation's token (replies of its round and hand-offs alike):
// the round that sent it need not wait for the other nodes.
func (r *registration) majority() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.majorCh
}

// previous returns, for a hand-off to generation gen by node i, when gen
// is the one just before the current generation, a channel closed once
// the current round's call to node i has ended; otherwise nil. A node
// handed to the previous token before that round reached it is the
// round's to keep: acquire.lua finds the old token in the key and renames
// it, if the waiter is still the best there. Released at once instead, the
// node would go to the next waiter, and a waiter between two rounds would
// lose its turn (a split, and FIFO broken).
func (r *registration) previous(i, gen int) <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if gen != r.gen-1 || r.round == nil {
		return nil
	}
	return r.round.ended[i]
}

// take marks in held the nodes that handed the current generation over.
func (r *registration) take(held []bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, h := range r.handed {
		held[i] = held[i] || h
	}
}
