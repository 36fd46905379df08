package redlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/frame"
	"github.com/locklab/locklab/internal/preflight"
	"github.com/locklab/locklab/internal/retry"
	"github.com/locklab/locklab/internal/token"
	"github.com/locklab/locklab/observe"
)

// Client is the part of a go-redis client that [Mutex] uses on one node:
// scripts (every command it sends is one). *redis.Client satisfies it, and so does
// any wrapper that injects faults around one. Each Client must talk to its
// own independent Redis master: Redlock's safety argument counts nodes, so
// replicas of one another or two clients for one server break it.
type Client interface {
	redis.Scripter
}

// Mutex is a lock on one key held on a majority of N independent Redis
// nodes (Redlock). [New] is required; the zero Mutex is not usable. A Mutex
// must not be copied after first use. Its methods are safe for concurrent
// use: a Lock on a Mutex that already holds the lock waits, as it would for
// any other holder, until the lock is unlocked or expires.
type Mutex struct {
	clients []Client
	addrs   []string // addrs[i] is clients[i]'s address, or ""
	key     string
	keys    []string // the lock key and its wait queue's key (see queueKey), for the scripts
	o       options
	f       frame.Frame      // the argument error, the hook and the observer
	gates   []preflight.Gate // gates[i] is node i's check before Lock and TryLock
	ttlMS   string           // the TTL in milliseconds, for take.lua
	// receiptMS is how long a release's receipt lives, in milliseconds:
	// at least a TTL, as it also tells a command that takes the token late
	// that the token was released (see retry.ReceiptFor).
	receiptMS string

	// contended hints that other clients are waiting: the last Lock had to
	// queue, or the last Unlock handed the lock over. Lock with a Notifier
	// then joins the queues at once instead of trying SET NX first.
	contended atomic.Bool

	inflight calls // node calls still running; see Settle

	mu    sync.Mutex // protects held, until, since, owns and cleanup
	held  *attempt   // the attempt that holds the lock; nil when not held
	until time.Time  // end of the validity while held
	since time.Time  // when this hold began, for observers
	owns  []bool     // owns[i]: node i is known to hold the token (it said so)
	// cleanup is what Unlock must also do on each node for a lock obtained
	// in the queues: leave the queue where the lock was not handed over
	// yet, and release tokens retired while waiting. nil after polling.
	cleanup []nodeCleanup
}

// New returns a Mutex for key on the nodes behind clients, one client per
// independent Redis master. A majority, len(clients)/2+1, must agree for the
// lock to be held, so 3 nodes tolerate 1 failure and 5 tolerate 2. Invalid
// arguments (no clients, a nil client, two clients for one address, an
// empty key, an invalid option, a [Notifier] for other nodes) are not
// reported here: every method of the returned Mutex returns an error
// wrapping [ErrInvalid].
func New(clients []Client, key string, opts ...Option) *Mutex {
	o, err := newOptions(opts)
	m := &Mutex{clients: slices.Clone(clients), key: key, o: o}
	if key != "" {
		m.keys = []string{key, queueKey(key)}
	}
	m.addrs = make([]string, len(clients))
	if err == nil {
		err = m.validate()
	}
	m.f = frame.Frame{Kind: "redlock", Key: key, Err: err, Hook: o.hook, Obs: o.observer}
	m.ttlMS = strconv.FormatInt(o.ttl.Milliseconds(), 10)
	m.receiptMS = retry.ReceiptFor(o.ttl)
	if err == nil {
		// "0": the probe leaves no receipt (see release.lua).
		probe := preflight.Probe{Script: releaseScript, Keys: m.releaseKeys(preflight.ProbeToken), Args: []any{preflight.ProbeToken, "0"}}
		for _, c := range m.clients {
			// On an AutoPipeliner the check's commands wait for their
			// replies only until their context ends, as correct's do (see
			// preflight.Bound); the rounds bound their own waits (fanOut).
			// Unbounded, a Lock given 2s with every node cut off waited
			// for the AutoPipeliner's read timeouts and retries: 20-40s.
			gc, _ := preflight.Bound(c)
			m.gates = append(m.gates, preflight.Gate{Pkg: "redlock", Key: key, Client: gc, Eviction: o.evictionCheck, NotObtained: ErrNotObtained, Probe: probe})
		}
	}
	return m
}

// check returns the error every method returns before it sends anything:
// the invalid arguments New found, or that New did not make m.
func (m *Mutex) check() error {
	if m == nil {
		return invalid(frame.NotMade)
	}
	return m.f.Check(ErrInvalid)
}

// Lock acquires the lock. Without a [Notifier] it polls: it makes an
// attempt, and while other holders keep a majority of nodes it retries
// after [WithRetry]'s delay, up to [WithTries] attempts. Each attempt has
// a fresh token of its own (see package retry): a command of an earlier
// attempt that reaches a slow node late can then never act on the lock a
// later attempt took. Such a late SET is released when its reply comes
// back, and a later attempt that finds it on a node releases it there and
// asks again (see setRound).
//
// An attempt sends SET key token NX PX ttl to every node in parallel and
// holds the lock only if a majority said OK and validity is left (see the
// package doc). It returns as soon as a majority said OK: the SETs still
// in flight to slower nodes finish in the background, each within the
// per-node timeout. Otherwise it deletes its token where it may be (the
// nodes that said OK, and those whose answer is unknown) before it tries
// again, and a SET still on its way then deletes its token when its reply
// comes back, so a failed attempt leaves no key of its own behind (barring
// a reply lost too: that key expires after the TTL, on that node only).
//
// With a Notifier ([WithNotifier]) Lock makes the same attempt while the
// lock looks free; when it is taken, Lock queues on every node and waits
// for the holder to hand the lock over, until it holds the lock or ctx
// ends.
//
// When Lock gives up it returns [ErrNotObtained], joined with ctx.Err()
// when ctx ended the wait. When too many nodes failed for a majority to be
// possible, it returns at once an error that wraps [ErrQuorumUnreachable]
// and one [NodeError] per failed node.
func (m *Mutex) Lock(ctx context.Context) error {
	if err := m.check(); err != nil {
		return err
	}
	start := time.Now()
	err := m.ready(ctx)
	if err == nil {
		err = m.lock(ctx)
	}
	m.f.Attempted(start, err == nil, err)
	return err
}

// lock is Lock after the checks: in the queues with a Notifier, otherwise
// attempt after attempt, each with a fresh token.
func (m *Mutex) lock(ctx context.Context) error {
	if m.o.notifier != nil {
		return m.lockQueued(ctx)
	}
	var (
		last    error    // why the last attempt missed, for running out of tries
		earlier []string // tokens of rounds whose SET may land late
	)
	err := retry.Do(ctx, m.o.retry, ErrNotObtained, func(ctx context.Context, _ int) (bool, error) {
		out, err := m.try(ctx, token.New(), &earlier)
		switch out {
		case acquired:
			return true, nil
		case failed:
			return false, err
		}
		last = err
		return false, nil
	})
	if last != nil && errors.Is(err, ErrNotObtained) {
		err = errors.Join(err, last) // why the last attempt missed
	}
	return err
}

// TryLock makes one attempt, as [Mutex.Lock] does, and does not retry or
// queue. It returns (false, nil) when other holders keep enough nodes that
// no majority was free. Errors are for the rest: an error wrapping
// [ErrNotObtained] when a majority answered OK but too late to leave any
// validity, [ErrQuorumUnreachable] with per-node errors, or
// ErrNotObtained joined with ctx.Err().
func (m *Mutex) TryLock(ctx context.Context) (bool, error) {
	if err := m.check(); err != nil {
		return false, err
	}
	start := time.Now()
	got, err := false, m.ready(ctx)
	if err == nil {
		var out outcome
		out, err = m.try(ctx, token.New(), nil)
		got = out == acquired
		if got || out == contended && !errors.Is(err, ErrQuorumUnreachable) {
			err = nil
		}
	}
	m.f.Attempted(start, got, err)
	return got, err
}

// Unlock deletes the lock's token from every node in parallel with an
// owner-checked script, so it never deletes another holder's key; where
// others wait in a node's queue ([WithNotifier]), the script hands that
// node straight to the best of them instead. It does so even when ctx is
// already cancelled (a lock left behind would block everyone for a whole
// TTL): each node's release is bounded by the per-node timeout instead
// ([WithNodeTimeout]). The Mutex no longer holds the lock afterwards,
// whatever the result.
//
// When the lock was taken by a SET round, Unlock returns once a majority
// of nodes has released it, as Lock returns once a majority holds it: the
// lock is free from then on. The releases still in flight to slower nodes
// finish in the background, each within the per-node timeout;
// [Mutex.Settle] waits for them. A lock handed over in the queues ([WithNotifier]) is handed on
// from every node before Unlock returns.
//
// It returns [ErrNotHeld] when this Mutex did not hold the lock, or when a
// majority of nodes answered and none of them still had the token (the lock
// had expired). Like Lock, it tolerates a failed minority silently: the
// nodes that answered then form a majority without our token. A node
// whose reply was lost with its connection (on a client whose retries are
// off) is asked again, up to 4 times while the per-node timeout lasts: the
// release answers a repeat as its first run did, so Unlock reports a
// release that took effect as one. Nodes that only did not answer within
// the per-node timeout (busy, not down) are sent the release again, after
// a growing pause, for up to 2s; an answer that comes after its round's
// per-node timeout (a client that runs a command on past its context, as
// go-redis's AutoPipeliner does) counts within those 2s. A node still
// without an answer when Unlock returns (its release may never have been
// sent: its client's connections were all in use) goes on being sent it in
// the background, after a growing pause, until it answers or a TTL has
// passed, so that it does not keep the key for a TTL with nobody holding
// the lock; [Mutex.Settle] waits for that too. When too many
// nodes failed for a majority, the error wraps [ErrQuorumUnreachable] with
// one [NodeError] per failed node, and the keys left expire after the TTL.
func (m *Mutex) Unlock(ctx context.Context) error {
	if err := m.check(); err != nil {
		return err
	}
	m.mu.Lock()
	a, cleanup, since, owns := m.held, m.cleanup, m.since, m.owns
	m.held, m.until, m.cleanup, m.owns = nil, time.Time{}, nil, nil
	m.mu.Unlock()
	if a == nil {
		return ErrNotHeld
	}
	now := a.giveUp() // a call of it still in flight releases its node when it ends
	for i, o := range owns {
		// A node handed over while the round's call to it was still on
		// its way (the round ended at a majority): released now, and again
		// when the call ends. Left to the call, a call slow to end (its
		// reply lost, go-redis sending it again) held the node from the
		// next waiter, and Unlock saw no node release the token.
		now[i] = now[i] || o
	}
	tok := a.tok
	if n := m.o.notifier; n != nil {
		if dot := strings.LastIndexByte(tok, '.'); dot > 0 {
			n.unregister(tok[:dot]) // a lock from the queues: its waiter is done
		}
	}
	// A lock taken by a SET round is released at a majority. One handed
	// over in the queues is handed on from every node before Unlock
	// returns: under contention the caller's next Lock would otherwise
	// queue on the nodes while they are still handing over, competing
	// with the next holder's hand-off for the same CPUs.
	enough := m.quorum()
	if cleanup != nil {
		enough = 0
	}
	tr := newReleases(len(m.clients)) // one background release per node, however many rounds; late answers
	start := time.Now()
	res := m.release(ctx, tok, cleanup, now, enough, tr)
	// Nodes too busy to answer in time: send the release again (its
	// receipt makes a second run answer as the first), for up to the
	// release timeout after the first, rather than leave the lock to its
	// TTL. Attempt 1 is the release just sent. A node that answered a
	// round after its per-node timeout (an AutoPipeliner's command runs on
	// past it, and a lost batch sent again can take longer) has answered:
	// every round counts it. ctx's cancellation does not end the loop (a
	// release runs for a cancelled caller too), so Repeat can only end
	// done or exhausted: res says which.
	_ = retry.Repeat(context.WithoutCancel(ctx), m.resend(retry.ReleaseTimeout, retry.ReleaseTimeout), func(_ context.Context, n int) (bool, error) {
		if n > 1 {
			if res, _ = tr.merge(res); !m.busy(res) {
				return true, nil
			}
			res = m.release(ctx, tok, cleanup, now, enough, tr)
		}
		res, _ = tr.merge(res)
		return !m.busy(res), nil
	})
	// Repeat starts no pause that would end past the release timeout; the
	// calls still running may answer in what is left of it.
	res = m.awaitLate(tr, res, start.Add(retry.ReleaseTimeout))
	switch {
	case m.unreachable(res):
		return m.quorumErr("unlock", res)
	case res.count(1)+res.count(2) == 0:
		err := fmt.Errorf("%w: %q: token on none of the %d nodes that answered", ErrNotHeld, m.key, len(m.clients)-len(res.failed))
		m.f.Report(observe.Lost, time.Since(since), err)
		return err
	}
	m.f.Report(observe.Released, time.Since(since), nil)
	return nil
}

// awaitLate waits, while the nodes missing for a majority only did not
// answer in time, until late answers make res no longer busy, or until
// deadline. It returns res with the answers merged.
func (m *Mutex) awaitLate(tr *releases, res result, deadline time.Time) result {
	res, changed := tr.merge(res)
	if !m.busy(res) {
		return res
	}
	wait := time.NewTimer(time.Until(deadline))
	defer wait.Stop()
	for m.busy(res) {
		select {
		case <-changed:
		case <-wait.C:
			return res
		}
		res, changed = tr.merge(res)
	}
	return res
}

// hold records attempt a as held until until, with the nodes known to hold
// its token (owns[i]) and what Unlock must clean up.
func (m *Mutex) hold(a *attempt, until time.Time, owns []bool, cleanup []nodeCleanup) {
	m.mu.Lock()
	m.held, m.until, m.owns, m.cleanup, m.since = a, until, owns, cleanup, time.Now()
	m.mu.Unlock()
}

// Until returns the end of the lock's validity: the time, on this
// process's monotonic clock, before which no other client can hold the
// lock, under the package's assumptions. Work that must be protected has to
// end before it. Until returns the zero time when the Mutex does not hold
// the lock (never locked, or unlocked); it does not notice expiry by
// itself, so compare with time.Now.
func (m *Mutex) Until() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.until
}

// Token returns the random token stored on the nodes while the lock is
// held, or "" when it is not. A lock handed over in the queues
// ([WithNotifier]) has a longer token, which also names the waiter's
// Notifier and TTL.
func (m *Mutex) Token() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.held == nil {
		return ""
	}
	return m.held.tok
}
