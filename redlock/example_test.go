package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/redlock"
)

// connect returns one client per node; addrs are the five independent
// redis-server processes that TestMain started.
func connect() ([]redlock.Client, func()) {
	var clients []redlock.Client
	var closers []func() error
	for _, addr := range addrs {
		c := redis.NewClient(&redis.Options{Addr: addr})
		clients = append(clients, c)
		closers = append(closers, c.Close)
	}
	return clients, func() {
		for _, c := range closers {
			_ = c()
		}
	}
}

// Two clients take turns on one lock held on five independent nodes.
func Example() {
	ctx := context.Background()
	clients, closeAll := connect()
	defer closeAll()

	c1 := redlock.New(clients, "lock:invoice-42")
	c2 := redlock.New(clients, "lock:invoice-42")

	if err := c1.Lock(ctx); err != nil {
		fmt.Println("c1:", err)
		return
	}
	fmt.Println("c1 acquired the lock on a majority of", len(clients), "nodes")

	if ok, err := c2.TryLock(ctx); !ok && err == nil {
		fmt.Println("c2 refused: the lock is held")
	}

	if err := c1.Unlock(ctx); err == nil {
		fmt.Println("c1 released")
	}
	if ok, _ := c2.TryLock(ctx); ok {
		fmt.Println("c2 acquired")
	}
	_ = c2.Unlock(ctx)
	fmt.Println("c2 released")
	// Output:
	// c1 acquired the lock on a majority of 5 nodes
	// c2 refused: the lock is held
	// c1 released
	// c2 acquired
	// c2 released
}

// A holder extends its lock before the validity runs out.
func ExampleMutex_Extend() {
	ctx := context.Background()
	clients, closeAll := connect()
	defer closeAll()

	m := redlock.New(clients, "lock:nightly-report", redlock.WithTTL(2*time.Second))
	if err := m.Lock(ctx); err != nil {
		fmt.Println(err)
		return
	}
	// validity = ttl − elapsed − drift = 2s − (a few ms) − 22ms
	fmt.Println("locked, valid for about", time.Until(m.Until()).Round(time.Second))

	// ... work on the first half of the report ...

	if err := m.Extend(ctx, 2*time.Second); err != nil {
		fmt.Println("extend:", err)
		return
	}
	fmt.Println("extended, valid for about", time.Until(m.Until()).Round(time.Second), "from now")
	_ = m.Unlock(ctx)
	fmt.Println("unlocked")
	// Output:
	// locked, valid for about 2s
	// extended, valid for about 2s from now
	// unlocked
}

// Kleppmann's paused client (scenario 10): c1 gets a majority of OKs, then
// pauses before it looks at the clock. Its keys expire and c2 takes the
// lock. When c1 resumes, the validity check counts the pause and refuses
// the lock, so the two never both believe they hold it.
func ExampleWithHook() {
	ctx := context.Background()
	clients, closeAll := connect()
	defer closeAll()

	const ttl = 500 * time.Millisecond
	key := "lock:payment-7"
	c2 := redlock.New(clients, key,
		redlock.WithRetry(func(int) time.Duration { return 5 * time.Millisecond }), redlock.WithTries(1000))
	pause := func(ctx context.Context, point string) {
		if point != redlock.HookAcquiredQuorum {
			return
		}
		fmt.Println("c1: a majority of 5 nodes said OK")
		fmt.Println("c1: paused (a stop-the-world GC, say) before checking the time")
		// While c1 is paused its keys expire, and c2 gets the lock.
		if err := c2.Lock(ctx); err == nil {
			fmt.Println("c2: acquired while c1 was paused")
		}
	}
	c1 := redlock.New(clients, key, redlock.WithTTL(ttl), redlock.WithHook(pause),
		redlock.WithNodeTimeout(ttl/2)) // generous: the first command also dials

	ok, err := c1.TryLock(ctx)
	fmt.Println("c1: resumed; lock obtained:", ok, "- validity exhausted:", errors.Is(err, redlock.ErrNotObtained))
	if err := c2.Unlock(ctx); err == nil {
		fmt.Println("c2: released; c1's late release did not touch c2's keys")
	}
	// Output:
	// c1: a majority of 5 nodes said OK
	// c1: paused (a stop-the-world GC, say) before checking the time
	// c2: acquired while c1 was paused
	// c1: resumed; lock obtained: false - validity exhausted: true
	// c2: released; c1's late release did not touch c2's keys
}

// With a Notifier, a waiter queues on every node and the holder's Unlock
// hands the lock straight to it: no polling, no retry delay.
func ExampleNewNotifier() {
	ctx := context.Background()
	clients, closeAll := connect()
	defer closeAll()
	subs := make([]redlock.NotifyClient, len(clients))
	for i, c := range clients {
		subs[i] = c.(*redis.Client)
	}
	n, err := redlock.NewNotifier(ctx, subs) // one per process
	if err != nil {
		fmt.Println(err)
		return
	}
	defer n.Close()

	c1 := redlock.New(clients, "lock:ledger", redlock.WithNotifier(n))
	queued := make(chan struct{})
	c2 := redlock.New(clients, "lock:ledger", redlock.WithNotifier(n),
		redlock.WithHook(func(_ context.Context, point string) {
			if point == redlock.HookQueued {
				close(queued)
			}
		}))

	if err := c1.Lock(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("c1 acquired")
	done := make(chan error)
	go func() { done <- c2.Lock(ctx) }()
	<-queued
	fmt.Println("c2 queued on every node")
	_ = c1.Unlock(ctx)
	fmt.Println("c1 released: each node handed the lock to c2")
	if err := <-done; err == nil {
		fmt.Println("c2 acquired, without polling")
	}
	_ = c2.Unlock(ctx)
	// Output:
	// c1 acquired
	// c2 queued on every node
	// c1 released: each node handed the lock to c2
	// c2 acquired, without polling
}
