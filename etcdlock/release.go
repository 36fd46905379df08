package etcdlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/locklab/locklab/internal/retry"
)

// abandon withdraws h's claim after a failure and returns the error Lock
// reports: ErrNotObtained joined with ctx's error if ctx ended, err
// otherwise, and the withdrawal's own error if it failed too.
func (m *Mutex) abandon(ctx context.Context, h *hold, err error) error {
	werr := m.withdraw(ctx, h)
	if cerr := retry.CtxErr(ctx); cerr != nil {
		return errors.Join(ErrNotObtained, cerr, werr)
	}
	return errors.Join(err, werr)
}

// withdraw removes h's claim, on a context detached from ctx's
// cancellation and bounded by retry.ReleaseTimeout, and makes sure a claim
// transaction still in the network can never put it back:
//
//   - A hold with its own lease revokes the lease, which deletes the claim;
//     a claim transaction that reaches etcd later fails (its lease is
//     gone).
//   - On a shared session's lease, which lives on, deleting the claim is
//     not enough when the claim's transaction got no answer: it may still
//     be in the network (held by a partition past gRPC's give-up, about
//     11s) and land after the delete, and then nothing would ever delete
//     it: a permanent stall for everyone in line (issue 34). So withdraw
//     deletes the claim and, in the same transaction, writes the claim's
//     tombstone on the session's lease; the claim transaction requires the
//     tombstone's absence. etcd applies transactions one at a time, so
//     either the claim landed first and the withdraw deletes it, or the
//     withdraw came first and the late claim writes nothing. The tombstone
//     stays until the session ends (one small key per Lock that lost its
//     claim's answer); it is outside the line (see lineEnd).
//
// When the claim's answer came, a delete of exactly that claim (by its
// create revision) is enough.
//
// A withdraw that fails on a shared session's lease goes on in the
// background (see sweep), whoever called it: a Lock that failed, or a
// TryLock that found the lock taken and whose withdraw got no answer,
// which otherwise left its claim at the head of the line once the holder
// released, for as long as the session lived.
func (m *Mutex) withdraw(ctx context.Context, h *hold) error {
	_, err := m.release(ctx, h, withdrawing)
	if err != nil && !h.own {
		m.sweep(h)
	}
	return err
}

// sweep withdraws h's claim in the background after a withdraw failed: a
// claim on a shared session's lease, which is kept alive, would otherwise
// stay at the head of the line for as long as the session lives. It
// withdraws again, then every second, until a withdraw succeeds or the
// session ends (its claims end with it).
func (m *Mutex) sweep(h *hold) {
	go func() {
		_ = retry.Repeat(m.shared.Ctx(), retry.Policy{Delay: sweepPause}, func(ctx context.Context, _ int) (bool, error) {
			_, err := m.release(ctx, h, withdrawing)
			return err == nil, nil
		})
	}()
}

// sweepPause is the pause between a sweep's withdraws.
func sweepPause(int) time.Duration { return time.Second }

// release ends h, on a context detached from ctx's cancellation and
// bounded by retry.ReleaseTimeout: it stops the keeper, withdraws or
// deletes the claim (see withdraw), and revokes a lease of the hold's own.
// Unlocking, it reports whether h's claim was still there; withdrawing (a
// Lock that failed or TryLock that found the lock taken), a hold with its
// own lease only revokes it, which deletes the claim: one write, not two.
//
// Whether the claim was there is decided by a transaction that deletes it
// only if its create revision is the held one: clientv3 never sends a
// transaction twice, so its answer is the truth. The Revoke that follows
// is not asked that question: clientv3 sends a Revoke again when its reply
// is lost, and the second finds no lease; Unlock then said ErrNotHeld of a
// lock it held until that moment (issue 34).
func (m *Mutex) release(ctx context.Context, h *hold, why ending) (bool, error) {
	answer := why == unlocking
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), retry.ReleaseTimeout)
	defer cancel()
	h.keep.stop() // no more renewals from this hold, whatever follows
	was := false
	switch {
	case h.unsure && !h.own:
		resp, err := m.client.Txn(ctx).Then(
			clientv3.OpDelete(h.claim),
			clientv3.OpPut(h.tomb, "", clientv3.WithLease(h.lease)),
		).Commit()
		switch {
		case errors.Is(err, rpctypes.ErrLeaseNotFound):
			return false, nil // the session's lease is gone, and every claim on it
		case err != nil:
			return false, fmt.Errorf("etcdlock: withdraw claim %q: %w", h.claim, err)
		}
		was = resp.Responses[0].GetResponseDeleteRange().Deleted == 1
	case h.rev != 0 && (answer || !h.own):
		earlier := false // an earlier Unlock's delete of this claim was sent
		if answer {
			earlier, h.deleted = h.deleted, true
		}
		resp, err := m.client.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(h.claim), "=", h.rev)).
			Then(clientv3.OpDelete(h.claim)).
			Commit()
		if err != nil {
			return false, fmt.Errorf("etcdlock: delete claim %q: %w", h.claim, err)
		}
		was = resp.Succeeded
		if !was && earlier {
			// The claim is gone. An earlier Unlock's delete, whose reply
			// was lost, may have removed it while the lock was held: then
			// the lease it lives on lives on (a lease that ended took the
			// claim with it). Only a delete removes a claim whose lease
			// lives, and only this hold deletes its claim.
			ttl, err := m.client.TimeToLive(ctx, h.lease)
			if err != nil {
				return false, fmt.Errorf("etcdlock: lease %x of claim %q, deleted by an earlier Unlock?: %w", h.lease, h.claim, err)
			}
			was = ttl.TTL > 0
		}
	}
	if h.own {
		_, err := m.client.Revoke(ctx, h.lease)
		switch {
		case err == nil, errors.Is(err, rpctypes.ErrLeaseNotFound):
		case answer && h.rev != 0:
			// The claim's fate is decided; the lease, renewed no more and
			// holding nothing, ends within the TTL.
		default:
			return false, fmt.Errorf("etcdlock: revoke lease %x of %q (its claim ends with the lease, at most %ds from now): %w", h.lease, m.key, m.ttl, err)
		}
	}
	return was, nil
}

// ending is why release ends a hold.
type ending int

const (
	withdrawing ending = iota // a claim Lock or TryLock gives up: whether it was there is not asked
	unlocking                 // Unlock: release reports whether the claim was still there
)
