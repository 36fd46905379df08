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

	"github.com/locklab/locklab/internal/token"
)

// channelPrefix starts every Notifier's channel name. The scripts spell
// it out too (release.lua, acquire.lua); a test checks that they agree.
const channelPrefix = "redlock:w:"

// subscribeGrace is how long NewNotifier waits for the remaining
// subscriptions once a majority is confirmed.
const subscribeGrace = 250 * time.Millisecond

// resubscribePause is how long a Notifier waits before it reads again from
// a node whose subscription failed (go-redis reconnects and subscribes
// again on that read), so that a node that is down is not dialled in a
// tight loop.
const resubscribePause = 10 * time.Millisecond

// NotifyClient is what a [Notifier] needs from a go-redis client of one
// node: a Pub/Sub subscription. *redis.Client implements it.
type NotifyClient interface {
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
// end in [Notifier.Close]. go-redis reconnects a subscription by itself
// when its connection drops; while it is down, that node sees nobody
// listening and passes its part of the lock to the next waiter, and a
// skipped waiter queues again on that node at its next round (see the
// package doc).
type Notifier struct {
	id    string         // random; names the channel and starts every waiter's token
	addrs []string       // addrs[i] is node i's address, or ""
	done  chan struct{}  // closed by Close: waiting Locks give up
	wg    sync.WaitGroup // the per-node goroutines

	mu      sync.Mutex      // protects subs, waiters and closed
	subs    []*redis.PubSub // subs[i] is nil until node i's goroutine has subscribed
	waiters map[string]*registration
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
		return nil, fmt.Errorf("%w: notifier: no clients", ErrInvalid)
	}
	addrs := make([]string, len(clients))
	for i, c := range clients {
		if isNil(c) {
			return nil, fmt.Errorf("%w: notifier: client %d is nil (%T)", ErrInvalid, i, c)
		}
		addrs[i] = addrOf(c)
		if j := slices.Index(addrs[:i], addrs[i]); addrs[i] != "" && j >= 0 {
			return nil, fmt.Errorf("%w: notifier: clients %d and %d both address %s", ErrInvalid, j, i, addrs[i])
		}
	}
	n := &Notifier{
		id:      token.New(),
		addrs:   addrs,
		done:    make(chan struct{}),
		subs:    make([]*redis.PubSub, len(clients)),
		waiters: map[string]*registration{},
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
// or a *NodeError), then delivers hand-off messages until Close.
func (n *Notifier) run(i int, c NotifyClient, confirmed chan<- error) {
	ps := c.Subscribe(context.Background(), channelPrefix+n.id)
	n.mu.Lock()
	closed := n.closed
	if !closed {
		n.subs[i] = ps
	}
	n.mu.Unlock()
	if closed {
		_ = ps.Close()
		confirmed <- &NodeError{Index: i, Addr: n.addrs[i], Err: errNotifierClosed}
		return
	}
	// A message published before the subscription is confirmed would be
	// lost: NewNotifier returns, and Mutexes queue, only after a majority.
	if _, err := ps.Receive(context.Background()); err != nil {
		confirmed <- &NodeError{Index: i, Addr: n.addrs[i], Err: err}
	} else {
		confirmed <- nil
	}
	for {
		msg, err := ps.ReceiveMessage(context.Background())
		if err != nil {
			// Closed, or the node is unreachable: go-redis reconnects and
			// subscribes again on the next read.
			t := time.NewTimer(resubscribePause)
			select {
			case <-n.done:
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		n.route(i, msg.Payload)
	}
}

// route records that node i handed the lock to tok, if tok is the current
// token of a registered waiter. A message for an older generation (a token
// the waiter retired) or for a waiter that has finished is dropped: such a
// token is never counted (see waitQueued).
func (n *Notifier) route(i int, tok string) {
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
	n.mu.Unlock()
	if r != nil {
		r.handedOver(i, gen)
	}
}

// register returns the registration through which the waiter id will
// learn of hand-offs.
func (n *Notifier) register(id string) (*registration, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, errNotifierClosed
	}
	r := &registration{quorum: len(n.addrs)/2 + 1, handed: make([]bool, len(n.addrs)), signal: make(chan struct{}, 1)}
	n.waiters[id] = r
	return r, nil
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
		return fmt.Errorf("%w: the notifier watches %d nodes, the Mutex uses %d", ErrInvalid, len(n.addrs), len(addrs))
	}
	for i, a := range addrs {
		if a != "" && n.addrs[i] != "" && a != n.addrs[i] {
			return fmt.Errorf("%w: node %d is %s for the Mutex but %s for the notifier", ErrInvalid, i, a, n.addrs[i])
		}
	}
	return nil
}

// A registration is one waiting Lock as its Notifier sees it.
type registration struct {
	quorum int           // hand-offs that make a majority
	signal chan struct{} // has a value when the waiter should look at handed

	mu     sync.Mutex // protects gen, handed and count
	gen    int        // the generation of the waiter's current token
	handed []bool     // nodes that handed the lock to that token
	count  int        // how many are true in handed
}

// handedOver records a hand-off by node i to generation gen. It wakes the
// waiter only at the first hand-off of a generation (to time a split) and
// when a majority is reached, not at every message.
func (r *registration) handedOver(i, gen int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if gen != r.gen || r.handed[i] {
		return
	}
	r.handed[i] = true
	r.count++
	if r.count == 1 || r.count == r.quorum {
		select {
		case r.signal <- struct{}{}:
		default:
		}
	}
}

// setGen starts a new generation: hand-offs to older tokens no longer
// count. It is called before the new token is sent anywhere.
func (r *registration) setGen(gen int) {
	r.mu.Lock()
	r.gen = gen
	clear(r.handed)
	r.count = 0
	r.mu.Unlock()
}

// take marks in held the nodes that handed the current generation over.
func (r *registration) take(held []bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, h := range r.handed {
		held[i] = held[i] || h
	}
}
