package redlock

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/token"
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
	// HookAcquiredQuorum fires during an acquisition after every node has
	// answered (or timed out) and a majority said OK, before the validity
	// left is computed. A client parked here for longer than the TTL is
	// Kleppmann's paused client: its keys expire meanwhile, and the validity
	// check, which measures the pause too, refuses the lock.
	HookAcquiredQuorum = "acquired-quorum"
	// HookBeforeRelease fires before the release script is sent to the
	// nodes: in [Mutex.Unlock], and when an attempt that did not obtain the
	// lock cleans up the nodes it did get.
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
	opts    options
	err     error // invalid arguments, returned by every method

	mu    sync.Mutex // protects token and until
	token string     // the token on the nodes while held; "" when not
	until time.Time  // end of the validity while held
}

// New returns a Mutex for key on the nodes behind clients, one client per
// independent Redis master. A majority, len(clients)/2+1, must agree for the
// lock to be held, so 3 nodes tolerate 1 failure and 5 tolerate 2. Invalid
// arguments (no clients, a nil client, two clients for one address, an
// empty key, an invalid option) are not reported here: every method of the
// returned Mutex returns an error wrapping [ErrInvalid].
func New(clients []Client, key string, opts ...Option) *Mutex {
	m := &Mutex{clients: slices.Clone(clients), key: key, opts: newOptions(opts)}
	m.addrs = make([]string, len(clients))
	m.err = m.validate()
	return m
}

func (m *Mutex) validate() error {
	if len(m.clients) == 0 {
		return fmt.Errorf("%w: no clients", ErrInvalid)
	}
	seen := map[string]int{}
	for i, c := range m.clients {
		if c == nil {
			return fmt.Errorf("%w: client %d is nil", ErrInvalid, i)
		}
		if v := reflect.ValueOf(c); v.Kind() == reflect.Pointer && v.IsNil() {
			return fmt.Errorf("%w: client %d is a nil %T", ErrInvalid, i, c)
		}
		if o, ok := c.(interface{ Options() *redis.Options }); ok {
			m.addrs[i] = o.Options().Addr
			if j, dup := seen[m.addrs[i]]; dup {
				return fmt.Errorf("%w: clients %d and %d both address %s; each node must count once", ErrInvalid, j, i, m.addrs[i])
			}
			seen[m.addrs[i]] = i
		}
	}
	if m.key == "" {
		return fmt.Errorf("%w: empty key", ErrInvalid)
	}
	return m.opts.err
}

// Lock acquires the lock, retrying after [WithRetry]'s delay while other
// holders keep a majority of nodes, up to [WithTries] attempts. Each
// attempt uses the same fresh token, so a SET from an earlier attempt that
// reaches a slow node late is removed by the final Unlock too.
//
// An attempt sends SET key token NX PX ttl to every node in parallel and
// holds the lock only if a majority said OK and validity is left (see the
// package doc). Otherwise it deletes its token from every node, also those
// that did not answer OK, before it tries again, so a failed attempt leaves
// no key of its own behind (barring a node too slow to answer in time, whose
// late SET expires after the TTL).
//
// When Lock gives up it returns [ErrNotObtained], joined with ctx.Err()
// when ctx ended the wait. When too many nodes failed for a majority to be
// possible, it returns at once an error that wraps [ErrQuorumUnreachable]
// and one [NodeError] per failed node.
func (m *Mutex) Lock(ctx context.Context) error {
	if m.err != nil {
		return m.err
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

// TryLock makes one attempt, as [Mutex.Lock] does, and does not retry. It
// returns (false, nil) when other holders keep enough nodes that no
// majority was free. Errors are for the rest: an error wrapping
// [ErrNotObtained] when a majority answered OK but too late to leave any
// validity, [ErrQuorumUnreachable] with per-node errors, or
// ErrNotObtained joined with ctx.Err().
func (m *Mutex) TryLock(ctx context.Context) (bool, error) {
	if m.err != nil {
		return false, m.err
	}
	out, err := m.attempt(ctx, token.New())
	switch out {
	case acquired:
		return true, nil
	case contended:
		return false, nil
	}
	return false, err
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
	if err := ctx.Err(); err != nil {
		return failed, errors.Join(ErrNotObtained, err)
	}
	ttl := m.opts.ttl
	start := time.Now() // monotonic; before the first SET is sent
	res := m.fanOut(ctx, func(ctx context.Context, c Client) (bool, error) {
		err := c.SetArgs(ctx, m.key, tok, redis.SetArgs{Mode: "NX", TTL: ttl}).Err()
		if errors.Is(err, redis.Nil) {
			return false, nil // the key exists: someone holds this node
		}
		return err == nil, err
	})
	if res.ok >= m.quorum() {
		m.hook(ctx, HookAcquiredQuorum)
		if validity(ttl, time.Since(start)) > 0 {
			m.mu.Lock()
			m.token, m.until = tok, start.Add(ttl-drift(ttl))
			m.mu.Unlock()
			return acquired, nil
		}
	}
	elapsed := time.Since(start)
	m.release(ctx, tok)
	switch {
	case ctx.Err() != nil:
		return failed, errors.Join(ErrNotObtained, ctx.Err())
	case m.unreachable(res):
		return failed, m.quorumErr("lock", res)
	case res.ok >= m.quorum():
		return tooLate, fmt.Errorf("%w: %q: a majority answered after %v, leaving no validity of the %v ttl",
			ErrNotObtained, m.key, elapsed.Round(time.Microsecond), ttl)
	}
	return contended, fmt.Errorf("%w: %q: set on %d of %d nodes, quorum %d",
		ErrNotObtained, m.key, res.ok, len(m.clients), m.quorum())
}

// Unlock deletes the lock's token from every node in parallel with an
// owner-checked script, so it never deletes another holder's key. It does
// so even when ctx is already cancelled (a lock left behind would block
// everyone for a whole TTL): each node's release is bounded by the per-node
// timeout instead ([WithNodeTimeout]). The Mutex no longer holds the lock
// afterwards, whatever the result.
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
	tok := m.token
	m.token, m.until = "", time.Time{}
	m.mu.Unlock()
	if tok == "" {
		return ErrNotHeld
	}
	res := m.release(ctx, tok)
	switch {
	case m.unreachable(res):
		return m.quorumErr("unlock", res)
	case res.ok == 0:
		return fmt.Errorf("%w: %q: token on none of the %d nodes that answered", ErrNotHeld, m.key, len(m.clients)-len(res.failed))
	}
	return nil
}

// release fires HookBeforeRelease and runs the release script for tok on
// every node, with ctx's values but not its cancellation.
func (m *Mutex) release(ctx context.Context, tok string) result {
	m.hook(ctx, HookBeforeRelease)
	return m.fanOut(context.WithoutCancel(ctx), func(ctx context.Context, c Client) (bool, error) {
		n, err := releaseScript.Run(ctx, c, []string{m.key}, tok).Int64()
		return n == 1, err
	})
}

// Extend resets the TTL of the lock's key on every node in parallel, with
// an owner-checked PEXPIRE, and recomputes the validity from the time the
// first PEXPIRE was sent, as an acquisition does. It succeeds only if a
// majority was extended and validity is left; then [Mutex.Until] moves.
// Otherwise Until is unchanged and the lock may still be held until then;
// the error wraps [ErrNotHeld] (the token is gone from too many nodes, or no
// validity is left), [ErrQuorumUnreachable] with per-node errors, or
// ctx.Err().
func (m *Mutex) Extend(ctx context.Context) error {
	if m.err != nil {
		return m.err
	}
	tok := m.Token()
	if tok == "" {
		return ErrNotHeld
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("redlock: extend %q: %w", m.key, err)
	}
	ttl := m.opts.ttl
	start := time.Now()
	res := m.fanOut(ctx, func(ctx context.Context, c Client) (bool, error) {
		n, err := extendScript.Run(ctx, c, []string{m.key}, tok, ttl.Milliseconds()).Int64()
		return n == 1, err
	})
	elapsed := time.Since(start)
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("redlock: extend %q: %w", m.key, ctx.Err())
	case m.unreachable(res):
		return m.quorumErr("extend", res)
	case res.ok < m.quorum():
		return fmt.Errorf("%w: %q: extended on %d of %d nodes, quorum %d",
			ErrNotHeld, m.key, res.ok, len(m.clients), m.quorum())
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
// held, or "" when it is not.
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
