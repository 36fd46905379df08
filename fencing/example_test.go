package fencing_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/fencing"
)

// exampleKey returns a lock name not used before in this process, so each
// Example starts from token 1 even under -count=N.
func exampleKey(name string) string {
	return fmt.Sprintf("example:%d:%s", keySeq.Add(1), name)
}

// Client A takes the lock and pauses past its lease. Client B takes the lock
// over and writes. A wakes up believing it still holds the lock and writes
// too: the store refuses A's write because B's token is newer.
func Example() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer client.Close()
	dir, _ := os.MkdirTemp("", "fencing-example")
	defer os.RemoveAll(dir)
	store, err := fencing.OpenStore(ctx, filepath.Join(dir, "orders.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()

	key := exampleKey("orders")
	a := fencing.New(client, key, fencing.WithTTL(50*time.Millisecond))
	b := fencing.New(client, key, fencing.WithRetry(func(int) time.Duration { return 5 * time.Millisecond }))

	if err := a.Lock(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("A got token", a.Token())
	// A pauses here (a GC pause, SIGSTOP...) and its lease runs out.

	if err := b.Lock(ctx); err != nil { // waits until A's lease has run out
		fmt.Println(err)
		return
	}
	fmt.Println("B got token", b.Token())
	if err := store.Write(ctx, "order-1", "shipped by B", b.Token()); err == nil {
		fmt.Println("B wrote")
	}

	// A wakes up and writes with the token it still has.
	err = store.Write(ctx, "order-1", "shipped by A", a.Token())
	if errors.Is(err, fencing.ErrStaleToken) {
		fmt.Println("A's late write rejected: stale token")
	}
	data, last, _ := store.Read(ctx, "order-1")
	fmt.Printf("order-1 holds %q, token %d\n", data, last)

	fmt.Println("B unlocks:", b.Unlock(ctx))
	fmt.Println("A unlocks:", errors.Is(a.Unlock(ctx), fencing.ErrNotHeld))
	// Output:
	// A got token 1
	// B got token 2
	// B wrote
	// A's late write rejected: stale token
	// order-1 holds "shipped by B", token 2
	// B unlocks: <nil>
	// A unlocks: true
}

// A refused TryLock writes nothing and spends no token: the next
// acquisition gets the very next number.
func ExampleMutex_TryLock() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer client.Close()

	key := exampleKey("report")
	a, b := fencing.New(client, key), fencing.New(client, key)

	ok, _ := a.TryLock(ctx)
	fmt.Println("A acquired:", ok, "token", a.Token())
	ok, _ = b.TryLock(ctx)
	fmt.Println("B acquired:", ok, "token", b.Token())
	_ = a.Unlock(ctx)
	fmt.Println("A released")
	ok, _ = b.TryLock(ctx)
	fmt.Println("B acquired:", ok, "token", b.Token())
	_ = b.Unlock(ctx)
	// Output:
	// A acquired: true token 1
	// B acquired: false token 0
	// A released
	// B acquired: true token 2
}

// The store applies a write only if its token is newer than every token the
// row has accepted; equal tokens are refused too.
func ExampleStore_Write() {
	ctx := context.Background()
	store, err := fencing.OpenStore(ctx, ":memory:")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()

	for _, w := range []struct {
		data string
		tok  fencing.Token
	}{{"v5", 5}, {"v3", 3}, {"v5 again", 5}, {"v7", 7}} {
		err := store.Write(ctx, "invoice-9", w.data, w.tok)
		fmt.Printf("write %-10q token %d: %v\n", w.data, w.tok, err)
	}
	data, last, _ := store.Read(ctx, "invoice-9")
	fmt.Printf("invoice-9 holds %q, token %d\n", data, last)
	// Output:
	// write "v5"       token 5: <nil>
	// write "v3"       token 3: fencing: stale token: write "invoice-9" with token 3 refused: it has seen token 5
	// write "v5 again" token 5: fencing: stale token: write "invoice-9" with token 5 refused: it has seen token 5
	// write "v7"       token 7: <nil>
	// invoice-9 holds "v7", token 7
}
