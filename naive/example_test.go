package naive_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/naive"
)

// A's work outlives its lease, and B takes the lock. A's Unlock, a plain
// DEL, then deletes B's lock, and C walks in while B is still inside.
// (redisAddr is the server TestMain started.)
func ExampleBlindDelete() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer client.Close()
	key := lockKey()
	defer client.Del(context.Background(), key)

	a := naive.NewBlindDelete(client, key, naive.WithTTL(50*time.Millisecond))
	b := naive.NewBlindDelete(client, key)
	c := naive.NewBlindDelete(client, key)

	if err := a.Lock(ctx); err != nil {
		fmt.Println("a:", err)
		return
	}
	fmt.Println("a acquired, with a 50ms lease")
	for client.Exists(ctx, key).Val() == 1 { // a's work outlives its lease
		time.Sleep(5 * time.Millisecond)
	}
	if err := b.Lock(ctx); err == nil {
		fmt.Println("b acquired")
	}
	if err := a.Unlock(ctx); err == nil {
		fmt.Println("a unlocked: its DEL deleted b's lock")
	}
	ok, _ := c.TryLock(ctx)
	fmt.Println("c acquired while b holds the lock:", ok)
	// Output:
	// a acquired, with a 50ms lease
	// b acquired
	// a unlocked: its DEL deleted b's lock
	// c acquired while b holds the lock: true
}
