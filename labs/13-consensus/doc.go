// Package lab13 holds the code of lab 13 (consensus: etcd and ZooKeeper).
//
// The workers of the lab keep order 1001's status in etcd, next to the
// lock, and write it through a [clientv3.KV] that the lab can stop right
// before a write leaves the worker ([Hooked]): the moment a worker frozen
// by a GC pause or SIGSTOP is about to write. [WriteOrder] in exercise.go
// is the learner's write.
package lab13

import (
	"context"
	"errors"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// OrderKey is where the order service keeps order 1001's status in etcd.
const OrderKey = "/orders/1001"

// HookBeforeWrite is the step a [Hooked] KV reaches right before it sends a
// write (Put, Delete, a transaction) to etcd.
const HookBeforeWrite = "before-write"

// ErrRefused is what a worker's write returns when the store refused it
// because the worker's lock is gone.
var ErrRefused = errors.New("lab13: write refused: the lock is no longer held")

// Hooked returns kv with hook called, with [HookBeforeWrite], right before
// each write is sent: Put, Delete, a transaction's Commit, and Do with a
// write. Reads go through untouched.
func Hooked(kv clientv3.KV, hook func(ctx context.Context, point string)) clientv3.KV {
	return &hooked{KV: kv, hook: hook}
}

type hooked struct {
	clientv3.KV
	hook func(ctx context.Context, point string)
}

func (h *hooked) Put(ctx context.Context, key, val string, opts ...clientv3.OpOption) (*clientv3.PutResponse, error) {
	h.hook(ctx, HookBeforeWrite)
	return h.KV.Put(ctx, key, val, opts...)
}

func (h *hooked) Delete(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.DeleteResponse, error) {
	h.hook(ctx, HookBeforeWrite)
	return h.KV.Delete(ctx, key, opts...)
}

func (h *hooked) Do(ctx context.Context, op clientv3.Op) (clientv3.OpResponse, error) {
	if !op.IsGet() {
		h.hook(ctx, HookBeforeWrite)
	}
	return h.KV.Do(ctx, op)
}

func (h *hooked) Txn(ctx context.Context) clientv3.Txn {
	return &hookedTxn{Txn: h.KV.Txn(ctx), ctx: ctx, hook: h.hook}
}

// hookedTxn calls the hook when the transaction is committed (sent).
type hookedTxn struct {
	clientv3.Txn
	ctx  context.Context
	hook func(ctx context.Context, point string)
}

func (t *hookedTxn) If(cs ...clientv3.Cmp) clientv3.Txn {
	t.Txn = t.Txn.If(cs...)
	return t
}

func (t *hookedTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	t.Txn = t.Txn.Then(ops...)
	return t
}

func (t *hookedTxn) Else(ops ...clientv3.Op) clientv3.Txn {
	t.Txn = t.Txn.Else(ops...)
	return t
}

func (t *hookedTxn) Commit() (*clientv3.TxnResponse, error) {
	t.hook(t.ctx, HookBeforeWrite)
	return t.Txn.Commit()
}
