package etcdlock_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/locklab/locklab/etcdlock"
	"github.com/locklab/locklab/internal/locktest"
	"github.com/locklab/locklab/internal/rig"
	"github.com/locklab/locklab/internal/sysclient"
)

// endpoints are the client addresses of the 3-member cluster the package's
// tests and Examples share; tests that kill, pause or partition members
// start their own.
var endpoints []string

func TestMain(m *testing.M) {
	rig.MainWith(m,
		func() (*rig.Etcd, error) { return rig.NewEtcd(context.Background(), 3) },
		func(e *rig.Etcd) { endpoints = e.Endpoints() })
}

var keySeq atomic.Int64

// lockKey returns a lock name no other test uses.
func lockKey(t testing.TB) string {
	return fmt.Sprintf("/locklab/test/%s/%d", t.Name(), keySeq.Add(1))
}

// client returns a client for eps (the shared cluster by default), closed
// when the test ends.
func client(t testing.TB, eps ...string) *clientv3.Client {
	t.Helper()
	if len(eps) == 0 {
		eps = endpoints
	}
	c, err := sysclient.Etcd(eps...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// claims returns the claim keys in the line of the lock named key, oldest
// first: the keys under key + "/" up to key + "/~", where the tombstones
// of withdrawn claims begin.
func claims(t testing.TB, c *clientv3.Client, key string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, key+"/", append(clientv3.WithFirstCreate(), clientv3.WithLimit(0), clientv3.WithRange(key+"/~"))...)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, kv := range resp.Kvs {
		out = append(out, string(kv.Key))
	}
	return out
}

// kind is etcdlock as the shared scenarios of internal/locktest see it.
var kind = locktest.Kind[*clientv3.Client]{
	Name: "etcdlock",
	Conn: func(t *testing.T) *clientv3.Client { return client(t) },
	New: func(c *clientv3.Client, key string, o locktest.Options) locktest.Fenced {
		return etcdlock.New(c, key, etcdlock.WithHook(o.Hook), etcdlock.WithObserver(o.Observer))
	},
	ErrNotHeld:     etcdlock.ErrNotHeld,
	ErrNotObtained: etcdlock.ErrNotObtained,
	Line:           claims,
	Claim:          func(l locktest.Fenced) string { return l.(*etcdlock.Mutex).Claim() },
	HookClaimed:    etcdlock.HookClaimed,
}
