package etcdlock_test

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/locklab/locklab/etcdlock"
)

// Two workers want the lock for order 1001; the second waits its turn and
// gets a larger fencing token.
func Example() {
	ctx := context.Background()
	client, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 2 * time.Second})
	if err != nil {
		panic(err)
	}
	defer client.Close()

	a := etcdlock.New(client, "/lock/order/1001", etcdlock.WithTTL(10*time.Second))
	b := etcdlock.New(client, "/lock/order/1001", etcdlock.WithTTL(10*time.Second))

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

// A write kept in etcd, made conditional on still holding the lock: when
// a's lease ends (here its session is closed; in life it expired while a
// was paused or cut off), its guarded write changes nothing, and the new
// holder's goes through.
func ExampleMutex_IsOwner() {
	ctx := context.Background()
	client, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 2 * time.Second})
	if err != nil {
		panic(err)
	}
	defer client.Close()
	session, err := concurrency.NewSession(client, concurrency.WithTTL(5))
	if err != nil {
		panic(err)
	}

	a := etcdlock.New(client, "/lock/order/1002", etcdlock.WithSession(session))
	b := etcdlock.New(client, "/lock/order/1002")
	write := func(who string, m *etcdlock.Mutex, status string) {
		resp, err := client.Txn(ctx).If(m.IsOwner()).Then(clientv3.OpPut("/orders/1002", status)).Commit()
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s writes %q: applied %v\n", who, status, resp.Succeeded)
	}

	if err := a.Lock(ctx); err != nil {
		panic(err)
	}
	fmt.Println("a acquired")
	_ = session.Close() // a's lease ends
	<-a.Done()
	fmt.Println("a's lease ended")
	if err := b.Lock(ctx); err != nil {
		panic(err)
	}
	fmt.Println("b acquired")
	write("b", b, "shipped")
	write("a", a, "packed") // a does not know yet
	fmt.Println("a.Unlock:", a.Unlock(ctx))
	_ = b.Unlock(ctx)
	_, _ = client.Delete(ctx, "/orders/1002")
	// Output:
	// a acquired
	// a's lease ended
	// b acquired
	// b writes "shipped": applied true
	// a writes "packed": applied false
	// a.Unlock: etcdlock: lock not held
}

// One session per process, shared by all its locks: one lease kept alive
// for all of them, and one etcd write per Lock and per Unlock.
func ExampleWithSession() {
	ctx := context.Background()
	client, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 2 * time.Second})
	if err != nil {
		panic(err)
	}
	defer client.Close()
	session, err := concurrency.NewSession(client, concurrency.WithTTL(10))
	if err != nil {
		panic(err)
	}
	defer session.Close()

	for _, order := range []string{"1003", "1004"} {
		m := etcdlock.New(client, "/lock/order/"+order, etcdlock.WithSession(session))
		if err := m.Lock(ctx); err != nil {
			panic(err)
		}
		fmt.Printf("order %s locked on the session's lease: %v\n", order, m.Claim() != "")
		if err := m.Unlock(ctx); err != nil {
			panic(err)
		}
	}
	// Output:
	// order 1003 locked on the session's lease: true
	// order 1004 locked on the session's lease: true
}
