package zklock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/locklab/locklab/zklock"
)

// Two workers want the lock for order 1001; the second waits its turn
// and gets a larger fencing token (a later zxid).
func Example() {
	ctx := context.Background()
	session, err := zklock.Connect(servers, 10*time.Second)
	if err != nil {
		panic(err)
	}
	defer session.Close()

	a := zklock.New(session, "/locks/order-1001")
	b := zklock.New(session, "/locks/order-1001")
	if err := a.Lock(ctx); err != nil {
		panic(err)
	}
	fmt.Println("a acquired")
	ok, _ := b.TryLock(ctx)
	fmt.Println("b TryLock:", ok)

	got := make(chan error)
	go func() { got <- b.Lock(ctx) }() // b waits in line
	tokenA := a.Fence()
	if err := a.Unlock(ctx); err != nil {
		panic(err)
	}
	fmt.Println("a released")
	if err := <-got; err != nil {
		panic(err)
	}
	fmt.Println("b acquired; its token is larger than a's:", b.Fence() > tokenA)
	if err := b.Unlock(ctx); err != nil {
		panic(err)
	}
	fmt.Println("b released")
	// Output:
	// a acquired
	// b TryLock: false
	// a released
	// b acquired; its token is larger than a's: true
	// b released
}

// The ephemeral node at work: a's process ends (here its session is
// closed; in life it died, or froze past the session timeout) and the lock
// is free, with no Unlock and no watchdog. A write kept in ZooKeeper,
// guarded by IsOwner in a multi-op, is refused for a and applied for b.
func ExampleMutex_IsOwner() {
	ctx := context.Background()
	sa, err := zklock.Connect(servers, 10*time.Second)
	if err != nil {
		panic(err)
	}
	sb, err := zklock.Connect(servers, 10*time.Second)
	if err != nil {
		panic(err)
	}
	defer sb.Close()
	conn := sb.Conn()
	if _, err := conn.Create("/orders-1002", nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
		panic(err)
	}
	write := func(who string, m *zklock.Mutex, status string) {
		_, err := conn.Multi(m.IsOwner(), &zk.SetDataRequest{Path: "/orders-1002", Data: []byte(status), Version: -1})
		fmt.Printf("%s writes %q: applied %v\n", who, status, err == nil)
	}

	a := zklock.New(sa, "/locks/order-1002")
	b := zklock.New(sb, "/locks/order-1002")
	if err := a.Lock(ctx); err != nil {
		panic(err)
	}
	fmt.Println("a acquired")
	sa.Close() // a's session ends: ZooKeeper deletes its child
	fmt.Println("a's session ended")
	if err := b.Lock(ctx); err != nil {
		panic(err)
	}
	fmt.Println("b acquired")
	write("b", b, "shipped")
	write("a", a, "packed")
	_ = b.Unlock(ctx)
	_ = conn.Delete("/orders-1002", -1)
	// Output:
	// a acquired
	// a's session ended
	// b acquired
	// b writes "shipped": applied true
	// a writes "packed": applied false
}
