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
	"github.com/locklab/locklab/internal/preflight"
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
		// By its type only: a node that is down or frozen now must not
		// hold NewNotifier up (a minority may be).
		if _, clustered := any(c).(*redis.ClusterClient); clustered {
			return nil, invalid("NewNotifier: clients[%d]: %v: a hand-off on a Redis Cluster can reach a waiter it counted as gone; wait by polling there (no WithNotifier)", i, preflight.ErrCluster)
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
	// The receipt lives a TTL of the waiter's (its token names it): a round
	// of tok still on its way then takes nothing (see receiptFor).
	ttl := retry.ReceiptTTL
	if f := strings.Split(tok, "."); len(f) > 1 {
		if ms, err := strconv.ParseInt(f[1], 10, 64); err == nil {
			ttl = max(ttl, time.Duration(ms)*time.Millisecond)
		}
	}
	_ = releaseScript.Run(ctx, n.clients[i], keys, tok, retry.ReceiptFor(ttl), "1").Err()
}
