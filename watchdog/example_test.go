package watchdog_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/locklab/locklab/correct"
	"github.com/locklab/locklab/reentrant"
	"github.com/locklab/locklab/watchdog"
)

// A job that runs for longer than the lock's ttl keeps the lock, because
// the watchdog renews it (here every ttl/20; the default is ttl/3).
func Example() {
	ctx := context.Background()
	const ttl = 2 * time.Second
	m := watchdog.New(rdb, "example:report", watchdog.WithTTL(ttl), watchdog.WithInterval(ttl/20))
	if err := m.Lock(ctx); err != nil {
		fmt.Println("lock:", err)
		return
	}
	fmt.Println("acquired with a ttl of", ttl)

	time.Sleep(ttl * 5 / 4) // the job: longer than the ttl
	ok, _ := watchdog.New(rdb, "example:report").TryLock(ctx)
	fmt.Println("after 1.25 ttls, another client can take it:", ok)

	if err := m.Unlock(ctx); err != nil {
		fmt.Println("unlock:", err)
	}
	<-m.Done()
	fmt.Println("released; Done closed, cause:", context.Cause(m.Context()))
	// Output:
	// acquired with a ttl of 2s
	// after 1.25 ttls, another client can take it: false
	// released; Done closed, cause: watchdog: lock released
}

// When the lock is lost, the holder's context is cancelled, so the work
// under it stops instead of carrying on without the lock.
func ExampleMutex_Context() {
	ctx := context.Background()
	m := watchdog.New(rdb, "example:invoice", watchdog.WithTTL(200*time.Millisecond))
	if err := m.Lock(ctx); err != nil {
		fmt.Println("lock:", err)
		return
	}
	fmt.Println("acquired")

	// An operator deletes the key and another service takes the lock.
	rdb.Del(ctx, "example:invoice")
	rdb.Set(ctx, "example:invoice", "someone else", time.Minute)
	fmt.Println("key taken over")

	work := m.Context() // the work runs under the holder's context
	<-work.Done()
	fmt.Println("work cancelled; lock lost:", errors.Is(context.Cause(work), watchdog.ErrNotHeld))
	fmt.Println("unlock:", m.Unlock(ctx) != nil)
	fmt.Println("the other holder's key is untouched:", rdb.Get(ctx, "example:invoice").Val())
	rdb.Del(ctx, "example:invoice")
	// Output:
	// acquired
	// key taken over
	// work cancelled; lock lost: true
	// unlock: true
	// the other holder's key is untouched: someone else
}

// Keep renews any lock with an owner-checked Extend; here a reentrant lock
// that processOrder takes and reserveStock re-enters.
func ExampleKeep() {
	const ttl = 2 * time.Second
	rm := reentrant.New(rdb, "example:order:1001", reentrant.WithTTL(ttl))
	ctx := reentrant.WithOwner(context.Background(), reentrant.NewOwner())
	notHeld := watchdog.WithNotHeld(func(err error) bool { return errors.Is(err, reentrant.ErrNotHeld) })
	renewed := make(chan struct{}, 100)
	hook := watchdog.WithHook(func(_ context.Context, point string) {
		if point == watchdog.HookRenewed {
			renewed <- struct{}{}
		}
	})

	_ = rm.Lock(ctx) // processOrder
	lease, err := watchdog.Keep(ctx, rm, watchdog.WithTTL(ttl), watchdog.WithInterval(ttl/20), notHeld, hook)
	if err != nil {
		fmt.Println("keep:", err)
		return
	}
	fmt.Println("processOrder: locked and kept")

	_ = rm.Lock(lease.Context()) // reserveStock re-enters, under the lease's context
	n, _ := rm.Count(ctx)
	fmt.Println("reserveStock: re-entered, count", n)
	<-renewed
	fmt.Println("watchdog: renewed")
	_ = rm.Unlock(ctx)
	n, _ = rm.Count(ctx)
	fmt.Println("reserveStock: unlocked, count", n)

	fmt.Println("processOrder: stop renewing:", lease.Stop())
	_ = rm.Unlock(ctx)
	n, _ = rm.Count(ctx)
	fmt.Println("processOrder: unlocked, count", n)
	// Output:
	// processOrder: locked and kept
	// reserveStock: re-entered, count 2
	// watchdog: renewed
	// reserveStock: unlocked, count 1
	// processOrder: stop renewing: <nil>
	// processOrder: unlocked, count 0
}

// Keep renews any lock with an owner-checked Extend, so a renewed lock can
// also wait without polling: correct's Mutex with a Notifier queues its
// waiters and hands the lock straight to the oldest one on Unlock, and Keep
// renews it while the holder works.
func ExampleKeep_handOff() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const ttl = 2 * time.Second
	n, err := correct.NewNotifier(ctx, rdb)
	if err != nil {
		fmt.Println("notifier:", err)
		return
	}
	defer n.Close()
	queued, renewed := make(chan struct{}), make(chan struct{}, 100)
	holder := correct.New(rdb, "example:invoice:7", correct.WithTTL(ttl), correct.WithNotifier(n))
	waiter := correct.New(rdb, "example:invoice:7", correct.WithTTL(ttl), correct.WithNotifier(n),
		correct.WithHook(func(_ context.Context, point string) {
			if point == correct.HookQueued {
				close(queued)
			}
		}))
	notHeld := watchdog.WithNotHeld(func(err error) bool { return errors.Is(err, correct.ErrNotHeld) })
	hook := watchdog.WithHook(func(_ context.Context, point string) {
		if point == watchdog.HookRenewed {
			renewed <- struct{}{}
		}
	})

	if err := holder.Lock(ctx); err != nil {
		fmt.Println("lock:", err)
		return
	}
	lease, err := watchdog.Keep(ctx, holder, watchdog.WithTTL(ttl), watchdog.WithInterval(ttl/20), notHeld, hook)
	if err != nil {
		fmt.Println("keep:", err)
		return
	}
	fmt.Println("holder: locked and kept")
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := waiter.Lock(ctx); err != nil {
			fmt.Println("waiter:", err)
			return
		}
		fmt.Println("waiter: handed the lock by the holder's Unlock")
		_ = waiter.Unlock(ctx)
	}()
	<-queued
	fmt.Println("waiter: queued, not polling")
	<-renewed
	fmt.Println("watchdog: renewed")

	fmt.Println("holder: stop renewing:", lease.Stop())
	_ = holder.Unlock(ctx)
	<-done
	// Output:
	// holder: locked and kept
	// waiter: queued, not polling
	// watchdog: renewed
	// holder: stop renewing: <nil>
	// waiter: handed the lock by the holder's Unlock
}
