package etcdlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/locklab/locklab/internal/args"
	"github.com/locklab/locklab/internal/frame"
	"github.com/locklab/locklab/internal/retry"
	"github.com/locklab/locklab/internal/token"
	"github.com/locklab/locklab/observe"
)

// Mutex is a lock on one name in etcd. It is not reentrant: see
// [Mutex.Lock].
//
// A Mutex must be made by [New]; the zero value is not usable (its methods
// return an error wrapping [ErrInvalid]). A Mutex must not be copied after
// first use. Its methods are safe for concurrent use; like a sync.Mutex it
// is one holder, so any goroutine may Unlock what another locked. Give each
// party that must exclude the others its own Mutex on the same key.
type Mutex struct {
	client *clientv3.Client
	key    string
	prefix string // key + "/": every claim on the lock lives under it
	ttl    int64  // seconds, for holds with a lease of their own
	shared *concurrency.Session

	// The fields above, and f's but Cur, are set by New and never change.

	f frame.Holding[hold] // the argument error, the hook, the observer and the current hold
}

// hold is one acquisition: its claim key, the claim's create revision (the
// fencing token) and the lease it lives on.
type hold struct {
	lease  clientv3.LeaseID
	keep   *keeper // renews the lease for this hold; its done is Done
	own    bool    // the lease is the hold's own: Unlock revokes it
	claim  string  // key/<lease hex>-<token>
	tomb   string  // key/~<lease hex>-<token>: the claim's tombstone, see withdraw
	unsure bool    // the claim's transaction was sent and its answer never came
	rev    int64   // the claim's create revision; 0 until known

	mu      sync.Mutex // serializes the Unlocks of this hold; protects deleted
	deleted bool       // an Unlock's delete of the claim has been sent
}

// New returns a Mutex for the lock named key, using client to reach etcd.
// It sends nothing to etcd. New never fails: if client is nil, key is
// empty or an option is invalid, every method of the returned Mutex
// reports it with an error wrapping [ErrInvalid].
//
// The claims of the lock are the keys under key + "/". Name locks so that
// no lock's name followed by "/" begins another's: the shorter one would
// also wait for the longer one's holders (never the other way round, and
// never two holders of one lock).
func New(client *clientv3.Client, key string, opts ...Option) *Mutex {
	o, err := newOptions(opts)
	if err == nil {
		err = args.Target(ErrInvalid, client, key)
	}
	return &Mutex{
		client: client,
		key:    key,
		prefix: key + "/",
		ttl:    int64(o.ttl / time.Second),
		shared: o.session,
		f:      frame.Holding[hold]{Frame: frame.Frame{Kind: "etcdlock", Key: key, Err: err, Hook: o.hook, Obs: o.observer}},
	}
}

// Lock acquires the lock, waiting in line while others hold it or are
// ahead of this Mutex. It returns nil once the lock is held;
// errors.Join(ErrNotObtained, ctx.Err()) when ctx ended first, without
// touching etcd if ctx had already ended; an error wrapping
// [ErrSessionLost] if the lease ended while it waited; and a wrapped error,
// at once, if etcd answers with an error. When Lock fails it withdraws its
// claim (or revokes its own lease), so it never leaves a claim that others
// would queue behind.
//
// Lock is not reentrant. Locking a Mutex that already holds the lock
// queues a second claim behind the first: it waits until the lock is
// unlocked (by another goroutine), its lease ends, or ctx ends.
func (m *Mutex) Lock(ctx context.Context) error {
	if err := m.check(); err != nil {
		return err
	}
	start := time.Now()
	_, err := m.acquire(ctx, inLine)
	m.f.Attempted(start, err == nil, err)
	return err
}

// TryLock makes one attempt to acquire the lock: it writes its claim and
// holds the lock if no older claim exists. It returns (true, nil) if it got
// the lock and (false, nil), having withdrawn its claim, if another claim
// is older. Errors are as for [Mutex.Lock].
func (m *Mutex) TryLock(ctx context.Context) (bool, error) {
	if err := m.check(); err != nil {
		return false, err
	}
	start := time.Now()
	ok, err := m.acquire(ctx, once)
	m.f.Attempted(start, ok, err)
	return ok, err
}

// queueing is what acquire does when older claims hold the lock.
type queueing int

const (
	once   queueing = iota // withdraw the claim and report the lock taken (TryLock)
	inLine                 // wait for the claim's turn (Lock)
)

// acquire writes a claim and, in line, waits for its turn.
func (m *Mutex) acquire(ctx context.Context, how queueing) (bool, error) {
	if err := retry.CtxErr(ctx); err != nil {
		return false, errors.Join(ErrNotObtained, err)
	}
	h, err := m.newHold(ctx)
	if err != nil {
		return false, err
	}

	// One transaction writes the claim and reads the oldest one. The
	// claim's name is fixed before it is sent, so the transaction sent
	// twice finds its claim in place (the Else branch) with the same
	// revision: safe to repeat after a lost reply. It also finds nothing
	// to do once the claim's tombstone exists: a transaction that reaches
	// etcd after Lock gave up on it and withdrew it (see withdraw) writes
	// nothing.
	h.unsure = true
	resp, err := m.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(h.claim), "=", 0),
			clientv3.Compare(clientv3.Version(h.tomb), "=", 0)).
		Then(clientv3.OpPut(h.claim, "", clientv3.WithLease(h.lease)), m.oldest()).
		Else(clientv3.OpGet(h.claim), m.oldest()).
		Commit()
	if err != nil {
		if errors.Is(err, rpctypes.ErrLeaseNotFound) {
			h.unsure = false // no claim can ever land on a lease that is gone
			err = fmt.Errorf("%w: lease %x not found", ErrSessionLost, h.lease)
		}
		return false, m.abandon(ctx, h, fmt.Errorf("etcdlock: claim %q: %w", m.key, err))
	}
	h.unsure = false
	h.rev = resp.Header.Revision
	if !resp.Succeeded {
		mine := resp.Responses[0].GetResponseRange().Kvs
		if len(mine) == 0 { // its tombstone exists: never for a claim sent once
			return false, m.abandon(ctx, h, fmt.Errorf("etcdlock: claim %q: %q was withdrawn", m.key, h.claim))
		}
		h.rev = mine[0].CreateRevision
	}
	first := resp.Responses[1].GetResponseRange().Kvs
	if len(first) == 0 || first[0].CreateRevision != h.rev {
		if how == once {
			if err := m.withdraw(ctx, h); err != nil {
				return false, err
			}
			return false, nil
		}
		m.f.At(ctx, HookClaimed)
		if err := m.waitTurn(ctx, h); err != nil {
			return false, m.abandon(ctx, h, err)
		}
	}
	select {
	case <-h.keep.done:
		// The keeper can no longer vouch for the lease: never hand out a
		// hold that is already presumed lost.
		return false, m.abandon(ctx, h, fmt.Errorf("etcdlock: lock %q: %w: the lease %x could not be kept alive", m.key, ErrSessionLost, h.lease))
	default:
	}
	m.f.Cur.Set(h)
	m.f.At(ctx, HookAcquired)
	return true, nil
}

// lineEnd returns the end of the range of the line's claims: the claims
// are the keys from prefix up to, not including, prefix + "~". A claim's
// name after the prefix is lowercase hex, '-' and base64url, all below
// '~'; tombstones (prefix + "~" + ...) sort after the line and are never
// in it.
func (m *Mutex) lineEnd() string { return m.prefix + "~" }

// oldest reads the first claim in line, by create revision.
func (m *Mutex) oldest() clientv3.Op {
	return clientv3.OpGet(m.prefix, append(clientv3.WithFirstCreate(), clientv3.WithRange(m.lineEnd()))...)
}

// newHold returns a hold on a new claim's lease, kept alive by a keeper of
// its own: the shared session's lease, renewed once first (so the keeper
// knows from when etcd keeps it), or a new lease that Lock grants with its
// own ctx (so an unreachable etcd cannot hold Lock past its deadline).
func (m *Mutex) newHold(ctx context.Context) (*hold, error) {
	if m.shared != nil {
		select {
		case <-m.shared.Done():
			return nil, fmt.Errorf("etcdlock: lock %q: %w: the session given with WithSession has ended", m.key, ErrSessionLost)
		default:
		}
		lease := m.shared.Lease()
		sent := time.Now()
		resp, err := m.client.KeepAliveOnce(ctx, lease)
		if err != nil {
			if cerr := retry.CtxErr(ctx); cerr != nil {
				return nil, errors.Join(ErrNotObtained, cerr)
			}
			if errors.Is(err, rpctypes.ErrLeaseNotFound) {
				return nil, fmt.Errorf("etcdlock: lock %q: %w: the lease %x of the session given with WithSession is gone", m.key, ErrSessionLost, lease)
			}
			return nil, fmt.Errorf("etcdlock: renew the session's lease %x for %q: %w", lease, m.key, err)
		}
		k := keep(m.shared.Ctx(), m.client, lease, time.Duration(resp.TTL)*time.Second, sent)
		return m.claimOn(lease, k, sessionLease), nil
	}
	granted := time.Now()
	lease, err := m.client.Grant(ctx, m.ttl)
	if err != nil {
		if cerr := retry.CtxErr(ctx); cerr != nil {
			return nil, errors.Join(ErrNotObtained, cerr)
		}
		return nil, fmt.Errorf("etcdlock: grant a lease for %q: %w", m.key, err)
	}
	ttl := time.Duration(lease.TTL) * time.Second
	if time.Since(granted) > ttl/3 {
		// A slow grant (an election: 7s seen after the leader's SIGKILL)
		// leaves little or none of the TTL the keeper can count on from
		// the grant's send time; a renewal sent now restarts it.
		at := time.Now()
		if _, err := m.client.KeepAliveOnce(ctx, lease.ID); err == nil {
			granted = at
		}
	}
	k := keep(context.Background(), m.client, lease.ID, ttl, granted)
	return m.claimOn(lease.ID, k, ownLease), nil
}

// claimOn returns a hold whose claim, unique to this acquisition, lives on
// lease, which is the shared session's or the hold's own.
func (m *Mutex) claimOn(lease clientv3.LeaseID, k *keeper, whose leaseOf) *hold {
	name := fmt.Sprintf("%x-%s", lease, token.New())
	return &hold{lease: lease, keep: k, own: whose == ownLease, claim: m.prefix + name, tomb: m.lineEnd() + name}
}

// leaseOf says whose lease a claim lives on.
type leaseOf int

const (
	sessionLease leaseOf = iota // the session's given with WithSession: Unlock leaves it
	ownLease                    // the hold's own: Unlock revokes it
)

// Unlock releases the lock if this Mutex still holds it: it deletes the
// hold's claim if the claim is still the one it made (same create
// revision), then revokes the hold's own lease (not with [WithSession]).
// It can only remove this hold's claim: claims are unique to an
// acquisition. It returns [ErrNotHeld] if the lock was never acquired,
// was already released, or its claim is gone (the lease expired); the
// delete decides, not the Revoke, whose reply clientv3 may have lost and
// sent again.
//
// Unlock ignores the cancellation and deadline of ctx (it keeps its
// values) and bounds the release by its own timeout of 2s, so a deferred
// Unlock with a request context that has ended still releases the lock.
// On a transport error the outcome is unknown: the Mutex keeps the hold
// and Unlock may be called again: it then reports nil if the first
// release had landed, found by its claim gone while its lease lives (with
// a lease of the hold's own, which is renewed no more, ask within the
// TTL; after it, ErrNotHeld). A hold stops renewing its lease at the first
// Unlock (and Done closes), so a claim on its own lease ends within the
// TTL whatever happens; with [WithSession], whose lease lives on, the
// Mutex goes on deleting the claim in the background, every second, until
// it is gone or the session ends.
func (m *Mutex) Unlock(ctx context.Context) error {
	if err := m.check(); err != nil {
		return err
	}
	h, err := m.f.Releasing(ctx, ErrNotHeld, HookBeforeRelease)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if m.f.Cur.Get() != h {
		return ErrNotHeld // a concurrent Unlock released it
	}
	was, err := m.release(ctx, h, unlocking)
	switch {
	case err != nil && !h.own:
		// The delete may never have reached etcd, and the claim, on a
		// session's lease that lives on, would head the line until the
		// session ends: go on deleting it in the background.
		m.sweep(h)
		return err
	case err != nil:
		return err
	case !was:
		return m.f.Ended(h, observe.Lost, ErrNotHeld)
	}
	return m.f.Ended(h, observe.Released, nil)
}

// Fence returns the fencing token of the current hold: the etcd revision
// that created its claim. Every later holder of the lock, after any
// failover, has a larger one, so a resource that refuses writes with a
// token smaller than one it has seen refuses a holder that lost the lock
// while paused. It returns 0 when the Mutex does not hold the lock as far
// as it knows.
func (m *Mutex) Fence() uint64 {
	if h := m.f.Cur.Get(); h != nil {
		return uint64(h.rev)
	}
	return 0
}

// IsOwner returns a comparison that holds while the current hold's claim
// exists: put it in the If of a transaction to make a write to etcd
// conditional on still holding the lock (the write and the check are then
// one step). When the Mutex does not hold the lock, the comparison never
// holds.
func (m *Mutex) IsOwner() clientv3.Cmp {
	if h := m.f.Cur.Get(); h != nil {
		return clientv3.Compare(clientv3.CreateRevision(h.claim), "=", h.rev)
	}
	return clientv3.Compare(clientv3.CreateRevision(m.prefix), "=", -1)
}

// Done returns a channel closed when the current hold can no longer
// promise that etcd keeps its lease: etcd said the lease ended or was
// revoked, the session given with [WithSession] ended, Unlock began, or
// no renewal was answered in time. It closes at least a tenth of the TTL
// before etcd can end the lease, counted from when the last answered
// renewal was sent, so before another client can get the lock however
// late the replies come (see the package doc). After Done the lock must be
// presumed lost. It is a signal to stop, not a guarantee: a holder paused
// past its TTL sees Done only when it runs again. When the Mutex does not
// hold the lock, Done returns a closed channel.
func (m *Mutex) Done() <-chan struct{} {
	if h := m.f.Cur.Get(); h != nil {
		return h.keep.done
	}
	return frame.Closed()
}

// Key returns the lock's name.
func (m *Mutex) Key() string { return m.key }

// Claim returns the etcd key of the current hold's claim, or "" when the
// Mutex does not hold the lock.
func (m *Mutex) Claim() string {
	if h := m.f.Cur.Get(); h != nil {
		return h.claim
	}
	return ""
}

// check returns the error every method returns before it sends anything:
// the invalid arguments New found, or that New did not make m.
func (m *Mutex) check() error {
	if m == nil {
		return args.Invalid(ErrInvalid, frame.NotMade)
	}
	return m.f.Check(ErrInvalid)
}
