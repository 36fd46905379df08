package redlock

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/token"
	"github.com/locklab/locklab/observe"
)

// Client is the part of a go-redis client that [Mutex] uses on one node:
// scripts and SET with arguments. *redis.Client satisfies it, and so does
// any wrapper that injects faults around one. Each Client must talk to its
// own independent Redis master: Redlock's safety argument counts nodes, so
// replicas of one another or two clients for one server break it.
type Client interface {
	redis.Scripter
	SetArgs(ctx context.Context, key string, value any, a redis.SetArgs) *redis.StatusCmd
}

// Hook points, passed to the function given to [WithHook].
const (
	// HookAcquiredQuorum fires during an acquisition once a majority of
	// nodes hold this Mutex's token (a majority has answered OK, or, with
	// a [Notifier], handed the lock over), before the validity left is
	// computed. A client parked here for longer than the
	// TTL is Kleppmann's paused client: its keys expire meanwhile, and the
	// validity check, which measures the pause too, refuses the lock.
	HookAcquiredQuorum = "acquired-quorum"
	// HookBeforeRelease fires before the release script is sent to the
	// nodes: in [Mutex.Unlock], and when an attempt that did not obtain the
	// lock cleans up the nodes it did get (or, with a [Notifier], leaves
	// the queues).
	HookBeforeRelease = "before-release"
)

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
	opts    options
	err     error // invalid arguments, returned by every method

	// contended hints that other clients are waiting: the last Lock had to
	// queue, or the last Unlock handed the lock over. Lock with a Notifier
	// then joins the queues at once instead of trying SET NX first.
	contended atomic.Bool

	tailMu sync.Mutex      // protects tails
	tails  []chan struct{} // tails[i] is closed when the last command sent to node i has ended (see fanOut)

	mu    sync.Mutex // protects token, until, since, owns and cleanup
	token string     // the token on the nodes while held; "" when not
	until time.Time  // end of the validity while held
	since time.Time  // when this hold began, for observers
	owns  []bool     // owns[i]: node i is known to hold token (it said so)
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
	m := &Mutex{clients: slices.Clone(clients), key: key, keys: []string{key, queueKey(key)}, opts: newOptions(opts)}
	m.addrs = make([]string, len(clients))
	m.err = m.validate()
	return m
}

func (m *Mutex) validate() error {
	if len(m.clients) == 0 {
		return fmt.Errorf("%w: no clients", ErrInvalid)
	}
	for i, c := range m.clients {
		if isNil(c) {
			return fmt.Errorf("%w: client %d is nil (%T)", ErrInvalid, i, c)
		}
		m.addrs[i] = addrOf(c)
		if m.addrs[i] == "" {
			continue
		}
		if j := slices.Index(m.addrs[:i], m.addrs[i]); j >= 0 {
			return fmt.Errorf("%w: clients %d and %d both address %s; each node must count once", ErrInvalid, j, i, m.addrs[i])
		}
	}
	if m.key == "" {
		return fmt.Errorf("%w: empty key", ErrInvalid)
	}
	if m.opts.err != nil {
		return m.opts.err
	}
	if n := m.opts.notifier; n != nil {
		return n.check(m.addrs)
	}
	return nil
}

// Lock acquires the lock. Without a [Notifier] it polls: it makes an
// attempt, and while other holders keep a majority of nodes it retries
// after [WithRetry]'s delay, up to [WithTries] attempts. Each attempt uses
// the same fresh token, so a SET from an earlier attempt that reaches a
// slow node late is removed by the final Unlock too.
//
// An attempt sends SET key token NX PX ttl to every node in parallel and
// holds the lock only if a majority said OK and validity is left (see the
// package doc). It returns as soon as a majority said OK: the SETs still
// in flight to slower nodes finish in the background, before any later
// command of this Mutex to those nodes. Otherwise it deletes its token
// from every node, also those that did not answer OK, before it tries
// again, so a failed attempt leaves no key of its own behind (barring a
// node too slow to answer in time, whose late SET expires after the TTL).
//
// With a Notifier ([WithNotifier]) Lock makes the same attempt while the
// lock looks free; when it is taken, Lock queues on every node and waits
// for the holder to hand the lock over, as the package doc describes, until
// it holds the lock or ctx ends.
//
// When Lock gives up it returns [ErrNotObtained], joined with ctx.Err()
// when ctx ended the wait. When too many nodes failed for a majority to be
// possible, it returns at once an error that wraps [ErrQuorumUnreachable]
// and one [NodeError] per failed node.
func (m *Mutex) Lock(ctx context.Context) error {
	if m.err != nil {
		return m.err
	}
	start := time.Now()
	err := m.lock(ctx)
	observe.Attempt(m.opts.observer, "redlock", m.key, start, err == nil, err)
	return err
}

func (m *Mutex) lock(ctx context.Context) error {
	if m.opts.notifier != nil {
		return m.lockQueued(ctx)
	}
	tok := token.New()
	for attempt := 1; ; attempt++ {
		out, err := m.attempt(ctx, tok)
		switch out {
		case acquired:
			return nil
		case failed:
			return err
		}
		if attempt >= m.opts.tries {
			return fmt.Errorf("%w (attempt %d of %d)", err, attempt, m.opts.tries)
		}
		t := time.NewTimer(m.opts.delay(attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(ErrNotObtained, ctx.Err())
		case <-t.C:
		}
	}
}

// TryLock makes one attempt, as [Mutex.Lock] does, and does not retry or
// queue. It returns (false, nil) when other holders keep enough nodes that
// no majority was free. Errors are for the rest: an error wrapping
// [ErrNotObtained] when a majority answered OK but too late to leave any
// validity, [ErrQuorumUnreachable] with per-node errors, or
// ErrNotObtained joined with ctx.Err().
func (m *Mutex) TryLock(ctx context.Context) (bool, error) {
	if m.err != nil {
		return false, m.err
	}
	start := time.Now()
	out, err := m.attempt(ctx, token.New())
	got := out == acquired
	if got || out == contended {
		err = nil
	}
	observe.Attempt(m.opts.observer, "redlock", m.key, start, got, err)
	return got, err
}

// outcome classifies one acquisition attempt.
type outcome int

const (
	acquired  outcome = iota // a majority, with validity left
	contended                // no majority free: others hold the key
	tooLate                  // a majority, but no validity left
	failed                   // ctx ended, or quorum unreachable
)

// attempt runs one acquisition round with tok and, unless it acquired,
// releases tok everywhere. The error, for outcomes other than acquired,
// says why.
func (m *Mutex) attempt(ctx context.Context, tok string) (outcome, error) {
	out, res, err := m.setRound(ctx, tok)
	if out != acquired {
		m.release(ctx, tok, nil, nil, 0)
		if out == contended && m.unreachable(res) {
			return failed, m.quorumErr("lock", res)
		}
	}
	return out, err
}

// setRound sends SET key tok NX PX ttl to every node and, if a majority
// said OK with validity left, records tok as held. It releases nothing. It
// returns once a majority said OK; owns then marks only the nodes that had
// answered, so Unlock reads the key on the others before releasing it.
func (m *Mutex) setRound(ctx context.Context, tok string) (outcome, result, error) {
	if err := ctxErr(ctx); err != nil {
		return failed, result{}, errors.Join(ErrNotObtained, err)
	}
	ttl := m.opts.ttl
	start := time.Now() // monotonic; before the first SET is sent
	res := m.fanOut(ctx, m.quorum(), func(ctx context.Context, _ int, c Client) (int64, error) {
		err := c.SetArgs(ctx, m.key, tok, redis.SetArgs{Mode: "NX", TTL: ttl}).Err()
		if errors.Is(err, redis.Nil) {
			return 0, nil // the key exists: someone holds this node
		}
		if err != nil {
			return 0, err
		}
		return 1, nil
	})
	if res.ok >= m.quorum() {
		m.hook(ctx, HookAcquiredQuorum)
		if validity(ttl, time.Since(start)) > 0 {
			owns := make([]bool, len(res.replies))
			for i, r := range res.replies {
				owns[i] = r.err == nil && r.code > 0
			}
			m.hold(tok, start.Add(ttl-drift(ttl)), owns, nil)
			return acquired, res, nil
		}
	}
	elapsed := time.Since(start)
	switch err := ctxErr(ctx); {
	case err != nil:
		return failed, res, errors.Join(ErrNotObtained, err)
	case res.ok >= m.quorum():
		return tooLate, res, fmt.Errorf("%w: %q: a majority answered after %v, leaving no validity of the %v ttl",
			ErrNotObtained, m.key, elapsed.Round(time.Microsecond), ttl)
	}
	return contended, res, fmt.Errorf("%w: %q: set on %d of %d nodes, quorum %d",
		ErrNotObtained, m.key, res.ok, len(m.clients), m.quorum())
}

// hold records tok as held until until, with the nodes known to hold it
// (owns[i]) and what Unlock must clean up.
func (m *Mutex) hold(tok string, until time.Time, owns []bool, cleanup []nodeCleanup) {
	m.mu.Lock()
	m.token, m.until, m.owns, m.cleanup, m.since = tok, until, owns, cleanup, time.Now()
	m.mu.Unlock()
}

// nodeCleanup is what a release must also do on one node for a lock
// obtained in the queues.
type nodeCleanup struct {
	dequeue bool     // our token may still be in this node's queue
	retired []string // tokens retired in rounds that failed on this node
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
// finish in the background, each within the per-node timeout and before
// any later command of this Mutex to those nodes; [Mutex.Settle] waits
// for them. A lock handed over in the queues ([WithNotifier]) is handed on
// from every node before Unlock returns.
//
// It returns [ErrNotHeld] when this Mutex did not hold the lock, or when a
// majority of nodes answered and none of them still had the token (the lock
// had expired). Like Lock, it tolerates a failed minority silently: the
// nodes that answered then form a majority without our token. When too many
// nodes failed for that, the error wraps [ErrQuorumUnreachable] with one
// [NodeError] per failed node, and the keys left expire after the TTL.
func (m *Mutex) Unlock(ctx context.Context) error {
	if m.err != nil {
		return m.err
	}
	m.mu.Lock()
	tok, cleanup, since := m.token, m.cleanup, m.since
	var trusted []bool
	if time.Now().Before(m.until) {
		trusted = m.owns
	}
	m.token, m.until, m.cleanup, m.owns = "", time.Time{}, nil, nil
	m.mu.Unlock()
	if tok == "" {
		return ErrNotHeld
	}
	// A lock taken by a SET round is released at a majority. One handed
	// over in the queues is handed on from every node before Unlock
	// returns: under contention the caller's next Lock would otherwise
	// queue on the nodes while they are still handing over, competing
	// with the next holder's hand-off for the same CPUs. (On the bench's
	// 2 cores that was worth a few percent of p99 at 32 clients, close to
	// the run-to-run noise.)
	enough := m.quorum()
	if cleanup != nil {
		enough = 0
	}
	res := m.release(ctx, tok, cleanup, trusted, enough)
	switch {
	case m.unreachable(res):
		return m.quorumErr("unlock", res)
	case res.count(1)+res.count(2) == 0:
		err := fmt.Errorf("%w: %q: token on none of the %d nodes that answered", ErrNotHeld, m.key, len(m.clients)-len(res.failed))
		if m.opts.observer != nil {
			m.emit(observe.Event{Kind: observe.Lost, Held: time.Since(since), Err: err})
		}
		return err
	}
	if m.opts.observer != nil {
		m.emit(observe.Event{Kind: observe.Released, Held: time.Since(since)})
	}
	return nil
}

// emit sends e, filled in with the lock's name and key, to the observer.
func (m *Mutex) emit(e observe.Event) {
	e.Lock, e.Key = "redlock", m.key
	m.opts.observer(e)
}

// release fires HookBeforeRelease and runs the release script for tok on
// every node, with ctx's values but not its cancellation. With cleanup,
// node i also leaves the queue if cleanup[i].dequeue, and releases the
// tokens in cleanup[i].retired. trusted[i] says node i is known to hold tok
// and the validity has not ended: the key there cannot have expired, so
// the script may hand over without reading it first (see release.lua). It
// returns once enough nodes (if enough > 0) have released, as fanOut
// does. It records in the contended hint whether a node was handed to a
// waiter.
func (m *Mutex) release(ctx context.Context, tok string, cleanup []nodeCleanup, trusted []bool, enough int) result {
	m.hook(ctx, HookBeforeRelease)
	plain := []any{tok}      // read concurrently, never written
	trust := []any{tok, "T"} // likewise
	res := m.fanOut(context.WithoutCancel(ctx), enough, func(ctx context.Context, i int, c Client) (int64, error) {
		args := plain
		if i < len(trusted) && trusted[i] {
			args = trust
		}
		if cleanup != nil && (cleanup[i].dequeue || len(cleanup[i].retired) > 0) {
			args = []any{tok, "0"}
			if cleanup[i].dequeue {
				args[1] = "1"
			}
			for _, r := range cleanup[i].retired {
				args = append(args, r)
			}
		}
		return releaseScript.Run(ctx, c, m.keys, args...).Int64()
	})
	if res.ok > 0 {
		m.contended.Store(res.count(2) > 0)
	}
	return res
}

// Settle waits until every command this Mutex has sent has ended, or ctx
// ends. Lock returns once a majority of nodes holds the lock, and Unlock
// of a lock taken by a SET round once a majority has released it; the
// commands still in flight to slower nodes end in the background, each
// within the per-node timeout. Nothing needs Settle for safety or cleanup (this
// Mutex's later commands to a node always follow its earlier ones there);
// it is for callers that read the nodes themselves right after a Lock
// (tests, a lab that shows each node), or that close the clients at once.
func (m *Mutex) Settle(ctx context.Context) error {
	if m.err != nil {
		return m.err
	}
	m.tailMu.Lock()
	tails := slices.Clone(m.tails)
	m.tailMu.Unlock()
	for _, t := range tails {
		if t == nil {
			continue
		}
		select {
		case <-t:
			continue // ended: nothing to wait for, whatever ctx says
		default:
		}
		select {
		case <-t:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Extend sets the TTL of the lock's key to ttl on every node in parallel,
// with an owner-checked PEXPIRE, and recomputes the validity from the time
// the first PEXPIRE was sent, as an acquisition does: validity = ttl −
// elapsed − drift(ttl). It succeeds only if a majority was extended and
// validity is left; then [Mutex.Until] moves (ttl may be shorter than what
// is left, and Until then moves back). Otherwise Until is unchanged and the
// lock may still be held until then; the error wraps [ErrNotHeld] (the
// token is gone from too many nodes, or no validity is left),
// [ErrQuorumUnreachable] with per-node errors, or ctx.Err(). A ttl below
// 1ms returns an error wrapping [ErrInvalid]; ttl is sent in whole
// milliseconds.
func (m *Mutex) Extend(ctx context.Context, ttl time.Duration) error {
	if m.err != nil {
		return m.err
	}
	if ttl < time.Millisecond {
		return fmt.Errorf("%w: Extend(ctx, %v): ttl is below 1ms", ErrInvalid, ttl)
	}
	ttl = ttl.Truncate(time.Millisecond)
	tok := m.Token()
	if tok == "" {
		return ErrNotHeld
	}
	if err := ctxErr(ctx); err != nil {
		return fmt.Errorf("redlock: extend %q: %w", m.key, err)
	}
	ms := strconv.FormatInt(ttl.Milliseconds(), 10)
	start := time.Now()
	res := m.fanOut(ctx, 0, func(ctx context.Context, _ int, c Client) (int64, error) {
		return extendScript.Run(ctx, c, []string{m.key}, tok, ms).Int64()
	})
	elapsed := time.Since(start)
	switch err := ctxErr(ctx); {
	case err != nil:
		return fmt.Errorf("redlock: extend %q: %w", m.key, err)
	case m.unreachable(res):
		return m.quorumErr("extend", res)
	case res.ok < m.quorum():
		err := fmt.Errorf("%w: %q: extended on %d of %d nodes, quorum %d",
			ErrNotHeld, m.key, res.ok, len(m.clients), m.quorum())
		if m.opts.observer != nil {
			m.mu.Lock()
			held := time.Since(m.since)
			m.mu.Unlock()
			m.emit(observe.Event{Kind: observe.Lost, Held: held, Err: err})
		}
		return err
	case validity(ttl, elapsed) <= 0:
		return fmt.Errorf("%w: %q: a majority extended after %v, leaving no validity of the %v ttl",
			ErrNotHeld, m.key, elapsed.Round(time.Microsecond), ttl)
	}
	m.mu.Lock()
	if m.token == tok { // not unlocked meanwhile
		m.until = start.Add(ttl - drift(ttl))
	}
	m.mu.Unlock()
	return nil
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
	return m.token
}

func (m *Mutex) quorum() int { return len(m.clients)/2 + 1 }

// unreachable reports whether so many nodes failed that the rest cannot
// form a majority.
func (m *Mutex) unreachable(res result) bool {
	return len(m.clients)-len(res.failed) < m.quorum()
}

func (m *Mutex) quorumErr(op string, res result) error {
	head := fmt.Errorf("redlock: %s %q: %d of %d nodes failed, quorum %d: %w",
		op, m.key, len(res.failed), len(m.clients), m.quorum(), ErrQuorumUnreachable)
	return errors.Join(append([]error{head}, res.failed...)...)
}

func (m *Mutex) hook(ctx context.Context, point string) {
	if m.opts.hook != nil {
		m.opts.hook(ctx, point)
	}
}

// isNil reports whether c is nil or holds a nil pointer, such as a
// *redis.Client variable that was never assigned.
func isNil(c any) bool {
	if c == nil {
		return true
	}
	v := reflect.ValueOf(c)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// addrOf returns the address of the node behind c, or "" if c does not
// say (a go-redis *redis.Client does, through Options).
func addrOf(c any) string {
	if o, ok := c.(interface{ Options() *redis.Options }); ok {
		return o.Options().Addr
	}
	return ""
}
