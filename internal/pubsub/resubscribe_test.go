package pubsub_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/internal/pubsub"
	"github.com/locklab/locklab/internal/rig"
)

var addr string

func TestMain(m *testing.M) {
	rig.Main(m, 1, func(nodes []*rig.Node) { addr = nodes[0].Addr() })
}

var channels atomic.Int64

// channel returns a channel name of the test's own.
func channel(t *testing.T) string {
	t.Helper()
	return fmt.Sprintf("pubsub-test:%s:%d", t.Name(), channels.Add(1))
}

// client returns a go-redis client for addr, closed with the test.
func client(t *testing.T, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(rig.ClientOptions(addr))
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// notifier is the part of a Notifier that Resubscribe works with: its
// current subscription (what Close closes) and whether it is closed.
type notifier struct {
	mu      sync.Mutex
	cur     *redis.PubSub
	closed  bool
	done    chan struct{}
	adopted chan *redis.PubSub // each adopted subscription, if not nil
	told    atomic.Int32       // Resubscribed calls
	toldCh  chan struct{}      // has a value after each Resubscribed call
}

func newNotifier() *notifier {
	return &notifier{done: make(chan struct{}), toldCh: make(chan struct{}, 16)}
}

func (n *notifier) sub(subscribe func(ctx context.Context) *redis.PubSub) pubsub.Sub {
	return pubsub.Sub{
		Subscribe: subscribe,
		Adopt: func(ps *redis.PubSub) bool {
			n.mu.Lock()
			defer n.mu.Unlock()
			if n.closed {
				return false
			}
			n.cur = ps
			if n.adopted != nil {
				n.adopted <- ps
			}
			return true
		},
		Done:         n.done,
		Resubscribed: func() { n.told.Add(1); n.toldCh <- struct{}{} },
	}
}

// close is a Notifier's Close: closed, done, and the current subscription
// closed.
func (n *notifier) close() {
	n.mu.Lock()
	n.closed = true
	close(n.done)
	cur := n.cur
	n.mu.Unlock()
	if cur != nil {
		_ = cur.Close()
	}
}

func TestResubscribeReturnsAConfirmedSubscription(t *testing.T) {
	ctx := t.Context()
	c, ch := client(t, addr), channel(t)
	old := c.Subscribe(ctx, ch)
	if _, err := old.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	n := newNotifier()
	defer n.close()
	ps := pubsub.Resubscribe(old, n.sub(func(ctx context.Context) *redis.PubSub { return c.Subscribe(ctx, ch) }))
	if ps == nil || n.cur != ps || n.told.Load() != 1 {
		t.Fatalf("Resubscribe = %v, adopted %v, told %d times; want a subscription, adopted, told once", ps, n.cur, n.told.Load())
	}
	if _, err := old.Receive(ctx); err == nil {
		t.Errorf("the old subscription still receives; want it closed")
	}
	// Confirmed before it returned: a message published now reaches it.
	if err := c.Publish(ctx, ch, "hello").Err(); err != nil {
		t.Fatal(err)
	}
	msg, err := ps.ReceiveTimeout(ctx, 5*time.Second)
	if m, ok := msg.(*redis.Message); err != nil || !ok || m.Payload != "hello" {
		t.Errorf("Receive after Resubscribe = %v, %v; want the message published after it returned", msg, err)
	}
}

func TestResubscribeTriesAgainUntilConfirmed(t *testing.T) {
	ctx := t.Context()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	_ = ln.Close() // nothing listens there now: every dial is refused
	up, down, ch := client(t, addr), client(t, dead), channel(t)
	var tries atomic.Int32
	n := newNotifier()
	defer n.close()
	ps := pubsub.Resubscribe(down.Subscribe(ctx, ch), n.sub(func(ctx context.Context) *redis.PubSub {
		if tries.Add(1) <= 2 {
			return down.Subscribe(ctx, ch) // Redis down: no confirmation
		}
		return up.Subscribe(ctx, ch)
	}))
	if ps == nil || tries.Load() != 3 || n.told.Load() != 1 {
		t.Errorf("Resubscribe = %v after %d tries, told %d times; want a subscription after 3, told once", ps, tries.Load(), n.told.Load())
	}
}

func TestResubscribeEndsWithItsNotifier(t *testing.T) {
	ctx := t.Context()
	c, ch := client(t, addr), channel(t)
	t.Run("closed while it pauses", func(t *testing.T) {
		n := newNotifier()
		n.close()
		subscribed := false
		ps := pubsub.Resubscribe(c.Subscribe(ctx, ch), n.sub(func(ctx context.Context) *redis.PubSub {
			subscribed = true
			return c.Subscribe(ctx, ch)
		}))
		if ps != nil || subscribed {
			t.Errorf("Resubscribe on a closed Notifier = %v, subscribed %v; want nil, and no new subscription", ps, subscribed)
		}
	})
	t.Run("adopt refused", func(t *testing.T) {
		var made *redis.PubSub
		s := pubsub.Sub{
			Subscribe: func(ctx context.Context) *redis.PubSub { made = c.Subscribe(ctx, ch); return made },
			Adopt:     func(*redis.PubSub) bool { return false }, // closed meanwhile
			Done:      make(chan struct{}),
		}
		ps := pubsub.Resubscribe(c.Subscribe(ctx, ch), s)
		if ps != nil || made == nil {
			t.Fatalf("Resubscribe with Adopt refusing = %v; want nil after one subscription", ps)
		}
		if _, err := made.Receive(ctx); err == nil {
			t.Errorf("the subscription Adopt refused still receives; want it closed")
		}
	})
	t.Run("closed while it waits for a confirmation", func(t *testing.T) {
		// SUBSCRIBE held in the network: no confirmation comes, and only
		// the Notifier's Close, through the adopted subscription, ends the
		// wait before PongTimeout.
		p, err := faultproxy.New(addr)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		held := p.Hold(faultproxy.Match{Command: "SUBSCRIBE"}, 0)
		defer held.Remove()
		slow := client(t, p.Addr())
		n := newNotifier()
		n.adopted = make(chan *redis.PubSub, 1)
		ended := make(chan *redis.PubSub, 1)
		go func() {
			ended <- pubsub.Resubscribe(c.Subscribe(ctx, ch), n.sub(func(ctx context.Context) *redis.PubSub { return slow.Subscribe(ctx, ch) }))
		}()
		<-n.adopted
		start := time.Now()
		n.close()
		select {
		case ps := <-ended:
			if ps != nil {
				t.Errorf("Resubscribe closed while waiting = %v; want nil", ps)
			}
			if took := time.Since(start); took >= pubsub.PongTimeout/2 {
				t.Errorf("Resubscribe returned %v after Close; want at once, well before PongTimeout (%v)", took, pubsub.PongTimeout)
			}
		case <-time.After(10 * pubsub.PongTimeout):
			t.Fatal("Resubscribe still running 10×PongTimeout after Close")
		}
	})
}

// TestReadResubscribesADeadSubscription runs Read with Resubscribe as a
// Notifier does: the server drops the subscriber's connection, and
// messages published after the new subscription is confirmed arrive.
func TestReadResubscribesADeadSubscription(t *testing.T) {
	ctx := t.Context()
	c, admin, ch := client(t, addr), client(t, addr), channel(t)
	ps := c.Subscribe(ctx, ch)
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	n := newNotifier()
	n.cur = ps
	got := make(chan string, 16)
	s := n.sub(func(ctx context.Context) *redis.PubSub { return c.Subscribe(ctx, ch) })
	read := make(chan struct{})
	go func() {
		defer close(read)
		pubsub.Read(ps, func() bool { n.mu.Lock(); defer n.mu.Unlock(); return n.closed }, func(p string) { got <- p },
			func(old *redis.PubSub) *redis.PubSub { return pubsub.Resubscribe(old, s) })
	}()
	defer func() { n.close(); <-read }()
	if err := admin.Do(ctx, "CLIENT", "KILL", "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-n.toldCh: // subscribed again, and confirmed
	case <-time.After(10 * time.Second):
		t.Fatal("no new subscription 10s after the old one was killed; want Read to subscribe again")
	}
	if err := admin.Publish(ctx, ch, "after").Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-got:
		if p != "after" {
			t.Errorf("Read routed %q; want %q", p, "after")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the message published after the new subscription was confirmed never came")
	}
}
