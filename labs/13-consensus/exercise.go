package lab13

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/locklab/locklab/etcdlock"
)

// WriteOrder sets order 1001's status in etcd, at [OrderKey], through kv,
// as the worker holding m. It returns nil when the status was written and
// an error wrapping [ErrRefused] when the write was refused because m no
// longer holds the lock. Run `make exercise LAB=13`: it fails until a
// worker whose lease ran out while it was frozen cannot overwrite the
// status the next holder wrote.
func WriteOrder(ctx context.Context, kv clientv3.KV, m *etcdlock.Mutex, status string) error {
	// Your code here (Lab 13): m.Done() closes once the worker knows its
	// lease is gone, but a worker frozen right before the Put below knows
	// nothing until it runs again, and then the Put is already on its way.
	// etcd knows who holds the lock when the write arrives: make the write
	// itself conditional on still holding it, and return an error wrapping
	// ErrRefused when etcd refuses it.
	select {
	case <-m.Done():
		return fmt.Errorf("%w: the lease is gone", ErrRefused)
	default:
	}
	_, err := kv.Put(ctx, OrderKey, status)
	return err
}
