package reentrant_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/locklab/locklab/reentrant"
)

// reserveStock locks the order itself, because other callers use it too.
func reserveStock(ctx context.Context, orders *reentrant.Mutex) {
	if err := orders.Lock(ctx); err != nil {
		fmt.Println("reserveStock:", err)
		return
	}
	n, _ := orders.Count(ctx)
	fmt.Println("reserveStock: re-entered order:1001, count", n)
	_ = orders.Unlock(ctx)
	n, _ = orders.Count(ctx)
	fmt.Println("reserveStock: unlocked, count", n)
}

// processOrder holds the order lock and calls reserveStock, which locks it
// again: with the same Owner in the context that is a re-entry, not a
// deadlock.
func Example() {
	orders := reentrant.New(rdb, "example:order:1001")
	ctx := reentrant.WithOwner(context.Background(), reentrant.NewOwner())
	if err := orders.Lock(ctx); err != nil {
		fmt.Println("processOrder:", err)
		return
	}
	n, _ := orders.Count(ctx)
	fmt.Println("processOrder: locked order:1001, count", n)

	reserveStock(ctx, orders)

	_ = orders.Unlock(ctx)
	n, _ = orders.Count(ctx)
	fmt.Println("processOrder: unlocked, count", n)
	// Output:
	// processOrder: locked order:1001, count 1
	// reserveStock: re-entered order:1001, count 2
	// reserveStock: unlocked, count 1
	// processOrder: unlocked, count 0
}

// Another owner can neither take the lock nor release it.
func ExampleMutex_Unlock() {
	m := reentrant.New(rdb, "example:invoice:7")
	alice := reentrant.WithOwner(context.Background(), reentrant.NewOwner())
	bob := reentrant.WithOwner(context.Background(), reentrant.NewOwner())

	_ = m.Lock(alice)
	fmt.Println("alice locked")
	ok, _ := m.TryLock(bob)
	fmt.Println("bob TryLock:", ok)
	err := m.Unlock(bob)
	fmt.Println("bob Unlock refused:", errors.Is(err, reentrant.ErrNotHeld))
	n, _ := m.Count(alice)
	fmt.Println("alice still holds it, count", n)
	fmt.Println("alice Unlock:", m.Unlock(alice))
	// Output:
	// alice locked
	// bob TryLock: false
	// bob Unlock refused: true
	// alice still holds it, count 1
	// alice Unlock: <nil>
}

// Without an Owner in the context, every call is refused.
func ExampleWithOwner() {
	m := reentrant.New(rdb, "example:no-owner")
	err := m.Lock(context.Background())
	fmt.Println(errors.Is(err, reentrant.ErrInvalid))
	fmt.Println(err)
	// Output:
	// true
	// reentrant: invalid argument: lock "example:no-owner": no Owner in the context (use reentrant.WithOwner)
}
