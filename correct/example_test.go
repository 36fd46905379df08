package correct_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/correct"
)

// Two clients share one lock. While c1 holds it, c2 is refused; once c1
// releases it, c2 gets it. (redisAddr is the server TestMain started.)
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer client.Close()

	c1 := correct.New(client, "example:report")
	c2 := correct.New(client, "example:report")

	if err := c1.Lock(ctx); err != nil {
		fmt.Println("c1:", err)
		return
	}
	fmt.Println("c1 acquired")

	if ok, err := c2.TryLock(ctx); err == nil && !ok {
		fmt.Println("c2 refused")
	}

	if err := c1.Unlock(ctx); err == nil {
		fmt.Println("c1 released")
	}

	if err := c2.Lock(ctx); err == nil {
		fmt.Println("c2 acquired")
	}
	if err := c2.Unlock(ctx); err == nil {
		fmt.Println("c2 released")
	}
	// Output:
	// c1 acquired
	// c2 refused
	// c1 released
	// c2 acquired
	// c2 released
}

// Lock waits while someone else holds the lock, and returns once they let
// go.
func ExampleMutex_Lock() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer client.Close()

	c1 := correct.New(client, "example:migrate")
	c2 := correct.New(client, "example:migrate")
	if err := c1.Lock(ctx); err != nil {
		fmt.Println("c1:", err)
		return
	}
	fmt.Println("c1 acquired")

	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := c2.Lock(ctx); err != nil { // blocks until c1 releases
			fmt.Println("c2:", err)
			return
		}
		fmt.Println("c2 acquired")
		_ = c2.Unlock(ctx)
	}()

	fmt.Println("c1 releasing")
	_ = c1.Unlock(ctx)
	<-done
	// Output:
	// c1 acquired
	// c1 releasing
	// c2 acquired
}

// TryLock suits work that only one instance should do, where the others
// should skip rather than queue: a scheduled job running on every replica
// of a service.
func ExampleMutex_TryLock() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer client.Close()

	runJob := func(replica string, m *correct.Mutex) {
		ok, err := m.TryLock(ctx)
		switch {
		case err != nil:
			fmt.Println(replica, "error:", err)
		case !ok:
			fmt.Println(replica, "skips: another replica runs the job")
		default:
			fmt.Println(replica, "runs the job")
		}
	}
	replica1 := correct.New(client, "example:nightly-invoices")
	replica2 := correct.New(client, "example:nightly-invoices")

	runJob("replica-1", replica1)
	runJob("replica-2", replica2) // while replica-1 is still at it
	if err := replica1.Unlock(ctx); err == nil {
		fmt.Println("replica-1 done")
	}
	// Output:
	// replica-1 runs the job
	// replica-2 skips: another replica runs the job
	// replica-1 done
}

// WithTTL sets how long the key outlives a holder that never unlocks. Pick
// it well above the longest the work can take.
func ExampleNew_withTTL() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer client.Close()

	m := correct.New(client, "example:rebuild-index", correct.WithTTL(30*time.Second))
	if err := m.Lock(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer m.Unlock(ctx)

	ttl, err := m.TTL(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("acquired; Redis will delete the key in about", ttl.Round(time.Second))
	// Output:
	// acquired; Redis will delete the key in about 30s
}

// Extend renews the lease while the holder still owns the lock; once the
// lock is gone it refuses with ErrNotHeld instead of extending someone
// else's lock.
func ExampleMutex_Extend() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer client.Close()

	m := correct.New(client, "example:export", correct.WithTTL(5*time.Second))
	if err := m.Lock(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("acquired for 5s")

	// The export turns out to be big: ask for more time before the lease
	// runs out, judged by the conservative local estimate.
	if time.Until(m.Until()) > 0 {
		if err := m.Extend(ctx, time.Minute); err != nil {
			fmt.Println(err)
			return
		}
		ttl, _ := m.TTL(ctx)
		fmt.Println("extended; TTL now about", ttl.Round(time.Second))
	}

	_ = m.Unlock(ctx)
	fmt.Println("released")
	err := m.Extend(ctx, time.Minute)
	fmt.Println("extend after release:", errors.Is(err, correct.ErrNotHeld))
	// Output:
	// acquired for 5s
	// extended; TTL now about 1m0s
	// released
	// extend after release: true
}

// Unlock releases the lock even when its context has ended, so a deferred
// Unlock still works after the request was cancelled.
func ExampleMutex_Unlock() {
	client := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer client.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := correct.New(client, "example:order-42")
	if err := m.Lock(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("acquired")

	cancel() // the caller hangs up while the lock is held
	err := m.Unlock(ctx)
	fmt.Println("unlock with a cancelled context:", err)
	fmt.Println("keys left:", client.Exists(context.Background(), "example:order-42").Val())
	// Output:
	// acquired
	// unlock with a cancelled context: <nil>
	// keys left: 0
}

// With a Notifier, waiters queue and the holder hands the lock straight to
// the oldest one: no polling, no idle gap, no barging. One Notifier serves
// every Mutex of the process; close it when the process is done with
// locks.
func ExampleWithNotifier() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer client.Close()
	n, err := correct.NewNotifier(ctx, client)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer n.Close()

	queued := make(chan struct{})
	c1 := correct.New(client, "example:queue", correct.WithNotifier(n))
	c2 := correct.New(client, "example:queue", correct.WithNotifier(n),
		correct.WithHook(func(_ context.Context, point string) {
			if point == correct.HookQueued {
				close(queued)
			}
		}))

	if err := c1.Lock(ctx); err != nil {
		fmt.Println("c1:", err)
		return
	}
	fmt.Println("c1 acquired")
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := c2.Lock(ctx); err != nil {
			fmt.Println("c2:", err)
			return
		}
		fmt.Println("c2 acquired: handed over by c1's Unlock")
		_ = c2.Unlock(ctx)
	}()
	<-queued
	fmt.Println("c2 queued")
	fmt.Println("c1 releases")
	_ = c1.Unlock(ctx)
	<-done
	// Output:
	// c1 acquired
	// c2 queued
	// c1 releases
	// c2 acquired: handed over by c1's Unlock
}
