package lab13_test

import (
	"testing"

	"github.com/locklab/locklab/labs"
)

// The edits start from the shipped exercise: its Done check, then its Put.
const shippedPut = `	_, err := kv.Put(ctx, OrderKey, status)
	return err`

// wrongFixes are the plausible wrong fixes of exercise.go, each caught by
// TestLab13_Exercise with a message that names it; the README's table
// lists the same.
var wrongFixes = []labs.WrongFix{
	{
		Name: "check m.Done() again right before the Put",
		Edits: []labs.Edit{labs.Replace(shippedPut, `	select {
	case <-m.Done():
		return fmt.Errorf("%w: the lease is gone", ErrRefused)
	default:
	}
`+shippedPut)},
		Caught: "older than B's token",
	},
	{
		Name: "Get the claim, Put only if it exists",
		Edits: []labs.Edit{labs.Replace(shippedPut, `	if resp, err := kv.Get(ctx, m.Claim()); err != nil || len(resp.Kvs) == 0 {
		return fmt.Errorf("%w: the claim is gone", ErrRefused)
	}
`+shippedPut)},
		Caught: "older than B's token",
	},
	{
		Name: "a transaction guarded by IsOwner that ignores Succeeded",
		Edits: []labs.Edit{labs.Replace(shippedPut, `	_, err := kv.Txn(ctx).If(m.IsOwner()).Then(clientv3.OpPut(OrderKey, status)).Commit()
	return err`)},
		Caught: "A's WriteOrder returned nil, but etcd did not write",
	},
	{
		Name: "TryLock once more before writing",
		Edits: []labs.Edit{labs.Replace(shippedPut, `	if ok, err := m.TryLock(ctx); err != nil || !ok {
		return fmt.Errorf("%w: not the holder", ErrRefused)
	}
`+shippedPut)},
		Caught: "the store refused B's write",
	},
	{
		Name: "a refused transaction retried after taking the lock again",
		// A waits for B's lock: the message must say so, not run into the
		// scene's deadline.
		Edits: []labs.Edit{labs.Replace(shippedPut, `	for {
		resp, err := kv.Txn(ctx).If(m.IsOwner()).Then(clientv3.OpPut(OrderKey, status)).Commit()
		if err != nil {
			return err
		}
		if resp.Succeeded {
			return nil
		}
		if err := m.Lock(ctx); err != nil {
			return fmt.Errorf("%w: %w", ErrRefused, err)
		}
	}`)},
		Caught: "A is waiting to take the lock again to retry it",
	},
	{
		// A hurried learner's: the right transaction, its refusal an
		// error of its own.
		Name: "a guarded transaction whose refusal does not wrap ErrRefused",
		Edits: []labs.Edit{labs.Replace(shippedPut, `	resp, err := kv.Txn(ctx).If(m.IsOwner()).Then(clientv3.OpPut(OrderKey, status)).Commit()
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		return fmt.Errorf("lab13: not the owner any more")
	}
	return nil`)},
		Caught: "a refused write must return an error wrapping lab13.ErrRefused, so that its caller",
	},
	{
		// The context class: the write ignores the ctx it is given.
		Name: "a guarded transaction on context.Background()",
		Edits: []labs.Edit{labs.Replace(shippedPut, `	resp, err := kv.Txn(context.Background()).If(m.IsOwner()).Then(clientv3.OpPut(OrderKey, status)).Commit()
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		return fmt.Errorf("%w: its claim is gone", ErrRefused)
	}
	return nil`)},
		Caught: `wrote "cancelled" with its context cancelled`,
	},
	{
		// The error class: etcd's error dropped.
		Name: "a guarded transaction whose error is dropped",
		Edits: []labs.Edit{labs.Replace(shippedPut, `	resp, err := kv.Txn(ctx).If(m.IsOwner()).Then(clientv3.OpPut(OrderKey, status)).Commit()
	if err != nil {
		return nil // etcd unreachable: the status will be written next time
	}
	if !resp.Succeeded {
		return fmt.Errorf("%w: its claim is gone", ErrRefused)
	}
	return nil`)},
		Caught: "returned nil with its context cancelled, and etcd did not take the write",
	},
	{
		// One nobody listed: the status put with the lock's own lease,
		// "so that it goes away with the lock". It does: the order's
		// status is deleted when the worker's lease ends.
		Name: "the status put under the lock's lease",
		Edits: []labs.Edit{labs.Replace(shippedPut, `	claim, err := kv.Get(ctx, m.Claim())
	if err != nil {
		return err
	}
	if len(claim.Kvs) == 0 {
		return fmt.Errorf("%w: its claim is gone", ErrRefused)
	}
	lease := clientv3.LeaseID(claim.Kvs[0].Lease)
	resp, err := kv.Txn(ctx).If(m.IsOwner()).Then(clientv3.OpPut(OrderKey, status, clientv3.WithLease(lease))).Commit()
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		return fmt.Errorf("%w: its claim is gone", ErrRefused)
	}
	return nil`)},
		Caught: "a write must outlive the lock",
	},
}

func TestLab13_WrongFixes(t *testing.T) { labs.WrongFixes(t, wrongFixes) }
