package correct

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/token"
)

// channelPrefix starts every waiter's channel name; see release.lua.
const channelPrefix = "correct:w:"

// NotifyClient is what a [Notifier] needs from a go-redis client: a
// Pub/Sub subscription, and RPUSH to join a lock's wait queue.
// *redis.Client (including the Sentinel-backed failover client) implements
// it. It must reach the same Redis as the Mutexes that use the Notifier.
type NotifyClient interface {
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
	RPush(ctx context.Context, key string, values ...any) *redis.IntCmd
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
// hand-off messages and wakes the waiting Lock calls. The goroutine starts
// in [NewNotifier] and ends in [Notifier.Close]. go-redis reconnects the
// subscription by itself if the connection drops; while it is down, a
// releasing holder sees nobody listening on the channel and passes the lock
// to the next waiter, and the skipped waiters queue again at their next
// check (see [WithNotifier]).
//
// Notifier works with a single primary (a *redis.Client, also behind
// Sentinel). On Redis Cluster, PUBLISH counts only the subscribers of the
// node that runs the script, so waiters on other nodes would look dead: use
// polling there.
type Notifier struct {
	id     string // random; names this notifier's channel and prefixes its waiters' tokens
	client NotifyClient
	ps     *redis.PubSub
	done   chan struct{} // closed when the goroutine has ended

	mu      sync.Mutex // protects waiters and closed
	waiters map[string]chan struct{}
	closed  bool
}

// NewNotifier subscribes to a fresh channel through client and starts the
// goroutine that delivers hand-offs. It returns an error if the
// subscription cannot be made before ctx ends.
func NewNotifier(ctx context.Context, client NotifyClient) (*Notifier, error) {
	if isNil(client) {
		return nil, fmt.Errorf("%w: nil client", ErrInvalid)
	}
	id := token.New()
	ps := client.Subscribe(ctx, channelPrefix+id)
	// The subscription must be confirmed before any Mutex queues: a
	// message published before it exists would be lost.
	if _, err := ps.Receive(ctx); err != nil {
		_ = ps.Close()
		return nil, fmt.Errorf("correct: subscribe: %w", err)
	}
	n := &Notifier{id: id, client: client, ps: ps, done: make(chan struct{}), waiters: map[string]chan struct{}{}}
	go n.deliver()
	return n, nil
}

// Close ends the subscription and waits for the Notifier's goroutine to
// exit. Lock calls still waiting give up with [ErrNotObtained]. It is safe
// to call more than once.
func (n *Notifier) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		<-n.done
		return nil
	}
	n.closed = true
	n.mu.Unlock()
	err := n.ps.Close()
	<-n.done
	return err
}

// deliver wakes the waiter whose token a message carries, until Close.
func (n *Notifier) deliver() {
	defer close(n.done)
	for {
		msg, err := n.ps.ReceiveMessage(context.Background())
		if err != nil {
			n.mu.Lock()
			closed := n.closed
			n.mu.Unlock()
			if closed {
				return
			}
			time.Sleep(10 * time.Millisecond) // Redis unreachable: go-redis reconnects on the next receive
			continue
		}
		n.mu.Lock()
		if ch, ok := n.waiters[msg.Payload]; ok {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
		n.mu.Unlock()
	}
}

// newToken returns a waiter's token: it names this notifier's channel and
// the TTL the waiter counts its lease with, which a hand-off gives it.
func (n *Notifier) newToken(ttl time.Duration) string {
	return n.id + "." + strconv.FormatInt(ttl.Milliseconds(), 10) + "." + token.New()
}

// register returns the channel on which tok's hand-off will be signalled.
func (n *Notifier) register(tok string) (<-chan struct{}, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, errNotifierClosed
	}
	ch := make(chan struct{}, 1)
	n.waiters[tok] = ch
	return ch, nil
}

func (n *Notifier) unregister(tok string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.waiters, tok)
}
