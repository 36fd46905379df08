package correct

import (
	"context"
	"errors"
	"fmt"
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

// channelPrefix starts every waiter's channel name; see handoff.lua.
const channelPrefix = "correct:w:"

// NotifyClient is what a [Notifier] needs from a go-redis client: a
// Pub/Sub subscription, and scripts, to pass on a lock handed to a waiter
// that has gone. *redis.Client (including the Sentinel-backed failover
// client) implements it. It must reach the same Redis as the Mutexes that
// use the Notifier.
type NotifyClient interface {
	redis.Scripter
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
}

// errNotifierClosed is joined to ErrNotObtained when a Notifier is closed
// under a waiting Lock.
var errNotifierClosed = errors.New("correct: notifier closed")

// A Notifier lets Mutexes that use it ([WithNotifier]) wait for a lock in
// a first-come, first-served queue, without polling: the holder's Unlock
// hands the lock straight to the oldest waiter and tells it on the
// waiter's Pub/Sub channel. Create one per process (or per Redis client),
// share it between Mutexes on any number of keys, and Close it when done.
//
// A Notifier holds one Pub/Sub connection and one goroutine, which reads
// hand-off messages and wakes the waiting Lock calls; the goroutine starts
// in [NewNotifier] and ends in [Notifier.Close]. It pings the subscription
// when it has been silent for a second, and a connection that does not
// answer within 2s more is taken for dead: the Notifier subscribes again
// on a new one and tells its waiters to look at their locks at once (while
// it was down, releasing holders saw nobody listening and passed them by).
//
// A hand-off message for a token that no Lock of this Notifier waits for
// any more (a waiter that gave up while its join of the queue was still on
// the wire) is not left to hold the lock for a TTL: the Notifier releases
// that lock on the spot, owner-checked, which hands it to the next waiter.
// Such a release runs in a short-lived goroutine; Close waits for it.
//
// Notifier works with a single primary (a *redis.Client, also behind
// Sentinel). On Redis Cluster, PUBLISH counts only the subscribers of the
// node that runs the script, so waiters on other nodes would look dead: use
// polling there.
type Notifier struct {
	id      string // random; names this notifier's channel and prefixes its waiters' tokens
	channel string
	client  NotifyClient
	done    chan struct{} // closed when Close is called
	exited  chan struct{} // closed when the goroutine has ended
	bounces sync.WaitGroup

	mu      sync.Mutex // protects ps, waiters and closed
	ps      *redis.PubSub
	waiters map[string]*registration
	closed  bool
}

// A registration is one token as its Notifier knows it: a Lock waiting
// for it to be handed over, or a Mutex holding it.
type registration struct {
	wake chan struct{} // a hand-off message came for the token
	look chan struct{} // the subscription was down: look at the lock now
	held bool          // the lock is held under the token: messages are old news
}

// NewNotifier subscribes to a fresh channel through client and starts the
// goroutine that delivers hand-offs. It returns an error if the
// subscription cannot be made before ctx ends.
func NewNotifier(ctx context.Context, client NotifyClient) (*Notifier, error) {
	if args.IsNil(client) {
		return nil, invalid("NewNotifier: nil client")
	}
	client, err := preflight.Bound(client)
	if err != nil {
		return nil, invalid("NewNotifier: client: %v", err)
	}
	if clustered, err := preflight.Clustered(ctx, client); err != nil {
		return nil, fmt.Errorf("correct: NewNotifier: %w", err)
	} else if clustered {
		return nil, invalid("NewNotifier: %v: a hand-off on a Redis Cluster can reach a waiter it counted as gone; wait by polling there (no WithNotifier)", preflight.ErrCluster)
	}
	id := token.New()
	n := &Notifier{
		id: id, channel: channelPrefix + id, client: client,
		done: make(chan struct{}), exited: make(chan struct{}),
		waiters: map[string]*registration{},
	}
	ps, err := n.subscribe(ctx)
	if err != nil {
		return nil, err
	}
	n.ps = ps
	go n.deliver()
	return n, nil
}

// subscribe makes a subscription to the notifier's channel and waits for
// its confirmation: a message published before it exists would be lost.
func (n *Notifier) subscribe(ctx context.Context) (*redis.PubSub, error) {
	ps := n.client.Subscribe(ctx, n.channel)
	if _, err := ps.Receive(ctx); err != nil {
		_ = ps.Close()
		return nil, fmt.Errorf("correct: subscribe: %w", err)
	}
	return ps, nil
}

// Close ends the subscription and waits for the Notifier's goroutines to
// exit. Lock calls still waiting give up with [ErrNotObtained]. It is safe
// to call more than once.
func (n *Notifier) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		<-n.exited
		return nil
	}
	n.closed = true
	close(n.done)
	ps := n.ps
	n.mu.Unlock()
	err := ps.Close()
	<-n.exited
	n.bounces.Wait()
	return err
}

// deliver reads the subscription until Close (see [pubsub.Read]): it wakes
// the waiter whose token a message carries, releases a lock handed to a
// token nobody waits for, and keeps the subscription alive:
// [pubsub.Resubscribe] replaces it when it dies, and the Notifier then has
// every waiter look at its lock (releasing holders saw nobody listening
// and passed it by).
func (n *Notifier) deliver() {
	defer close(n.exited)
	sub := pubsub.Sub{
		Subscribe:    func(ctx context.Context) *redis.PubSub { return n.client.Subscribe(ctx, n.channel) },
		Adopt:        n.adopt,
		Done:         n.done,
		Resubscribed: n.lookAll,
	}
	resubscribe := func(old *redis.PubSub) *redis.PubSub { return pubsub.Resubscribe(old, sub) }
	pubsub.Read(n.current(), n.isClosed, n.route, resubscribe)
}

// adopt makes ps the current subscription, the one Close closes; it
// reports false when the Notifier is closed.
func (n *Notifier) adopt(ps *redis.PubSub) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return false
	}
	n.ps = ps
	return true
}

// lookAll tells every waiter to look at its lock now: the subscription was
// down, and releases may have passed it by.
func (n *Notifier) lookAll() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, r := range n.waiters {
		signal(r.look)
	}
}

// route handles one hand-off message, "<token>\n<key>".
func (n *Notifier) route(payload string) {
	tok, key, ok := strings.Cut(payload, "\n")
	if !ok {
		return
	}
	n.mu.Lock()
	r, known := n.waiters[tok]

	if known && !r.held {
		signal(r.wake)
	}
	closed := n.closed
	if !known && !closed {
		n.bounces.Add(1)
	}
	n.mu.Unlock()
	if !known && !closed {
		go n.bounce(key, tok)
	}
}

// bounce releases key if it holds tok: the lock was handed to a waiter of
// this Notifier that no longer waits. The release is owner-checked, so a
// stale message (the lock has moved on since) changes nothing.
func (n *Notifier) bounce(key, tok string) {
	defer n.bounces.Done()
	ctx, cancel := retry.Detach(context.Background())
	defer cancel()
	base := keyslot.Base(key)
	keys := []string{key, base + ":q", keyslot.Receipt(base, tok)}
	_ = releaseScript.Run(ctx, n.client, keys, tok, channelArg, keepArg, retry.ReceiptFor(tokenTTL(tok))).Err()
}

// tokenTTL returns the TTL a waiter's token names ("<notifier id>.<ttl
// ms>.<random>", see newToken), or 0 when it names none.
func tokenTTL(tok string) time.Duration {
	_, rest, _ := strings.Cut(tok, ".")
	ms, _, _ := strings.Cut(rest, ".")
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return 0
	}
	return time.Duration(n) * time.Millisecond
}

func (n *Notifier) current() *redis.PubSub {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ps
}

func (n *Notifier) isClosed() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.closed
}

// newToken returns a waiter's token: it names this notifier's channel and
// the TTL the waiter counts its lease with, which a hand-off gives it.
func (n *Notifier) newToken(ttl time.Duration) string {
	var buf [96]byte // id, TTL and token fit: one allocation, the string
	b := append(append(buf[:0], n.id...), '.')
	b = append(strconv.AppendInt(b, ttl.Milliseconds(), 10), '.')
	return string(token.Append(b))
}

// register records that a Lock waits for tok to be handed over.
func (n *Notifier) register(tok string) (*registration, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, errNotifierClosed
	}
	r := &registration{wake: make(chan struct{}, 1), look: make(chan struct{}, 1)}
	n.waiters[tok] = r
	return r, nil
}

// held records that the lock is held under tok: until unregister, a
// message for it is old news, not a lock to pass on.
func (n *Notifier) held(tok string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if r, ok := n.waiters[tok]; ok {
		r.held = true
	}
}

// unregister forgets tok: the Lock gave up, or the hold ended.
func (n *Notifier) unregister(tok string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.waiters, tok)
}

// signal puts a value in ch if it has room.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
