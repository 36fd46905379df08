package fencing

// The lock, in detail.
//
// [Mutex.TryLock] runs one Lua script (acquire.lua). Redis runs a script
// with nothing interleaved, so the three steps are one: if the lock key
// exists, it returns 0 and writes nothing; otherwise it INCRs the key's
// counter, SETs the lock to a fresh random owner value with NX PX ttl, and
// returns the new counter value, the token. A failed attempt therefore
// consumes no token. (The version in many write-ups, INCR then SET NX as two
// commands, burns a token on every refused attempt and can leave a token
// issued for a lock that was never taken.) The owner value, 128 random bits,
// is what [Mutex.Unlock] and [Mutex.Extend] check in their own scripts, so a
// holder never deletes or extends a lock it lost; the token is returned
// apart, by [Mutex.Token]. An extension keeps the token.
//
// When a reply is lost (a network error, or the context ending while the
// request was in flight) the script may have run. TryLock then releases the
// lock it may have taken, and the token it may have consumed is skipped.
// Tokens are strictly increasing, not gap-free.
//

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/args"
	"github.com/locklab/locklab/internal/frame"
	"github.com/locklab/locklab/internal/keyslot"
	"github.com/locklab/locklab/internal/preflight"
	"github.com/locklab/locklab/internal/retry"
	"github.com/locklab/locklab/internal/token"
	"github.com/locklab/locklab/observe"
)

// Client is the part of a go-redis client the package uses: running
// scripts. *redis.Client, *redis.ClusterClient, *redis.Ring and the
// Sentinel failover clients all satisfy it.
type Client interface {
	redis.Scripter
}

// Mutex is a lock on one Redis key whose every acquisition comes with a
// fencing [Token]. Make it with [New]; the zero Mutex is not usable (its
// methods return an error wrapping [ErrInvalid]). A Mutex must not be
// copied after first use. Its methods are safe for concurrent use, but it
// is one lock holder: to contend for a lock, give each client its own Mutex.
//
// The Mutex is not reentrant: Lock on a Mutex that holds the lock waits
// like any other client, and TryLock returns false.
type Mutex struct {
	client  Client
	key     string
	counter string // the token counter, in key's cluster slot
	base    string // the prefix of the keys kept beside key (receipts)
	receipt string // how long a release's receipt lives (retry.ReceiptFor)
	o       options
	f       frame.Frame    // the argument error, the hook and the observer
	gate    preflight.Gate // the server's check before Lock and TryLock

	// The fields above are set by New and never change.

	mu        sync.Mutex // protects value, releasing, token, until and since
	value     string     // owner value of the current hold; "" when not held
	releasing string     // the value an Unlock is releasing now; see claimRelease
	token     Token      // fencing token of the current hold; 0 when not held
	until     time.Time  // end of the lease as this Mutex counts it
	since     time.Time  // when the current hold began, for the observer
}

// New returns a Mutex for key. New does not talk to Redis and does not fail:
// invalid arguments (a nil client, an empty key, a key that cannot share a
// cluster slot with its counter, a TTL under 1ms) are reported by every
// method as an error wrapping [ErrInvalid].
//
// Besides key, the lock uses a counter key holding the last token issued,
// which is never deleted; the package doc gives its name.
func New(client Client, key string, opts ...Option) *Mutex {
	o, err := newOptions(opts)
	counter, kerr := counterKey(key)
	if err == nil {
		err = kerr
	}
	if err == nil && args.IsNil(client) {
		err = invalid("nil client")
	}
	client, cerr := preflight.Bound(client) // an AutoPipeliner waits for replies only until ctx ends
	if err == nil && cerr != nil {
		err = invalid("client: %v", cerr)
	}
	base := "" // an invalid key has no keys beside it
	if kerr == nil {
		base = keyslot.Base(key)
	} else {
		counter = ""
	}
	return &Mutex{
		client:  client,
		key:     key,
		counter: counter,
		base:    base,
		receipt: retry.ReceiptFor(o.ttl),
		o:       o,
		f:       frame.Frame{Kind: "fencing", Key: key, Err: err, Hook: o.hook, Obs: o.observer},
		gate: preflight.Gate{
			Pkg: "fencing", Key: key, Client: client, Eviction: o.evictionCheck, NotObtained: ErrNotObtained,
			Probe: preflight.Probe{
				Script: releaseScript,
				Keys:   []string{key, keyslot.Receipt(base, preflight.ProbeToken)},
				Args:   []any{preflight.ProbeToken, "0"}, // no receipt
			},
		},
	}
}

// Key returns the lock's Redis key, as given to [New].
func (m *Mutex) Key() string {
	if m == nil {
		return ""
	}
	return m.key
}

// Token returns the fencing token of the current hold, or 0 when this Mutex
// does not hold the lock (never locked, unlocked, or found lost by Unlock or
// Extend). Token does not look at the clock: after the lease ran out it
// still returns the token, which is the point of fencing. Whether the token
// is still good is decided by the resource ([Store.Write]), not the holder.
func (m *Mutex) Token() Token {
	if m == nil {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.token
}

// Until returns when the current lease ends, or the zero time when this
// Mutex does not hold the lock. It is counted from just before the request
// that acquired or extended the lock was sent, so it never overstates the
// lease (see the package doc for what it does not account for).
func (m *Mutex) Until() time.Time {
	if m == nil {
		return time.Time{}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.until
}

// TryLock makes one attempt to acquire the lock. It returns (true, nil) when
// acquired, after which [Mutex.Token] returns the new fencing token;
// (false, nil) when the lock is held by anyone, in which case nothing was
// written in Redis and no token was consumed; (false, err) on invalid
// arguments or a Redis or network error.
//
// A reply lost to a client that sends the command again (go-redis on its
// default options) costs nothing: the second run of the acquire script
// finds the lock holding this attempt's value and returns the same token.
// When the reply is lost for good (a network error the client does not
// retry, or ctx ending while the request was in flight), the script may
// have run: TryLock then releases the lock if it was taken for this
// attempt, detached from ctx's cancellation, and the token that attempt
// may have consumed is skipped: tokens keep growing, with a gap.
func (m *Mutex) TryLock(ctx context.Context) (bool, error) {
	if err := m.check(); err != nil {
		return false, err
	}
	start := time.Now()
	ok, err := false, m.gate.Pass(ctx)
	if err == nil {
		ok, err = m.try(ctx)
	}
	m.f.Attempted(start, ok, err)
	return ok, err
}

// releaseKeys are release.lua's keys for value.
func (m *Mutex) releaseKeys(value string) []string {
	return []string{m.key, keyslot.Receipt(m.base, value)}
}

// try is one attempt with a fresh value: TryLock without the argument
// check and the observer.
func (m *Mutex) try(ctx context.Context) (bool, error) {
	if err := retry.CtxErr(ctx); err != nil {
		return false, errors.Join(ErrNotObtained, err)
	}
	m.f.At(ctx, HookBeforeAcquire)
	value := token.New()
	start := time.Now()
	ms := m.o.ttl.Milliseconds()
	n, err := acquireScript.Run(ctx, m.client, []string{m.key, m.counter, keyslot.Receipt(m.base, value)}, value, ms).Int64()
	if err != nil {
		var reply redis.Error
		if !errors.As(err, &reply) { // no reply from Redis: the script may have run
			m.releaseLost(ctx, value)
		}
		return false, retry.Failed(ctx, ErrNotObtained, fmt.Errorf("fencing: acquire %q: %w", m.key, err))
	}
	if n == 0 {
		return false, nil
	}
	if n < 0 {
		m.releaseLost(ctx, value)
		return false, fmt.Errorf("fencing: acquire %q: script returned %d", m.key, n)
	}
	if lease := time.Duration(ms) * time.Millisecond; frame.Late(start, lease) {
		// The answer came with less than half the lease left: give the lock
		// back rather than return a lease that is over, or nearly (see Lock).
		m.releaseLost(ctx, value)
		return false, frame.Short{Err: m.f.TooLate(ErrNotObtained, "acquire", start, lease, "the lock was given back")}
	}
	m.mu.Lock()
	m.value, m.token = value, Token(n)
	m.until = start.Add(time.Duration(ms) * time.Millisecond)
	m.since = start
	m.mu.Unlock()
	m.f.At(ctx, HookAcquired)
	return true, nil
}

// Lock acquires the lock, retrying as set by [WithRetry] and [WithTries]
// until it succeeds, the tries run out ([ErrNotObtained]) or ctx ends
// (errors.Join([ErrNotObtained], ctx.Err())). A Redis or network error ends
// Lock at once and is returned wrapped. A failed Lock leaves no lock of its
// own behind (see [Mutex.TryLock] for a lost reply).
//
// Lock returns nil only with at least half the TTL left: [Mutex.Until] is
// then at least ttl/2 away. An acquire whose answer comes back later (the
// lease counts from its send) is given back at once, its token skipped,
// and Lock tries again; TryLock returns false with an error wrapping
// [ErrNotObtained] that says so. A link whose round trip takes half the
// TTL never gets the lock.
func (m *Mutex) Lock(ctx context.Context) error {
	if err := m.check(); err != nil {
		return err
	}
	start := time.Now()
	err := m.gate.Pass(ctx)
	if err == nil {
		var late frame.Shorts // tries that took the lock too late, and gave it back
		err = retry.Do(ctx, m.o.retry, ErrNotObtained, func(ctx context.Context, _ int) (bool, error) {
			return late.Keep(m.try(ctx))
		})
		err = late.Join(err, ErrNotObtained)
	}
	m.f.Attempted(start, err == nil, err)
	return err
}

// Unlock releases the lock if this Mutex still holds it, and returns
// [ErrNotHeld] if it does not (never locked, already unlocked, or the lease
// ran out). It runs even when ctx is already cancelled: the release uses a
// context detached from ctx's cancellation, with its own 2s timeout, so a
// holder whose work was cancelled still frees the lock. The token counter is
// left as it is.
func (m *Mutex) Unlock(ctx context.Context) error {
	if err := m.check(); err != nil {
		return err
	}
	value, err := m.claimRelease()
	if err != nil {
		return err
	}
	defer m.releaseDone(value)
	m.f.At(ctx, HookBeforeRelease)
	rctx, cancel := retry.Detach(ctx)
	defer cancel()
	n, err := releaseScript.Run(rctx, m.client, m.releaseKeys(value), value, m.receipt).Int64()
	if err != nil {
		return fmt.Errorf("fencing: release %q: %w", m.key, err)
	}
	held, ours := m.forget(value)
	if n != 1 {
		err := fmt.Errorf("%w: unlock %q: expired or taken over", ErrNotHeld, m.key)
		if ours {
			m.lost(held, err)
		}
		return err
	}
	m.f.Report(observe.Released, held, nil)
	m.f.At(ctx, HookReleased)
	return nil
}

// Extend resets the lease to ttl from now if this Mutex still holds the
// lock, keeping the same fencing token: an extension continues the hold, it
// is not a new acquisition. It returns [ErrNotHeld] if the lock is not held
// (the lease already ran out: extending cannot revive it), and an error
// wrapping [ErrInvalid] if ttl is under 1ms.
func (m *Mutex) Extend(ctx context.Context, ttl time.Duration) error {
	if err := m.check(); err != nil {
		return err
	}
	if ttl < time.Millisecond {
		return invalid("Extend(ctx, %v): ttl must be at least 1ms", ttl)
	}
	value, err := m.heldValue("extend")
	if err != nil {
		return err
	}
	m.f.At(ctx, HookBeforeExtend)
	start := time.Now()
	ms := ttl.Milliseconds()
	n, err := extendScript.Run(ctx, m.client, []string{m.key}, value, ms).Int64()
	if err != nil {
		return fmt.Errorf("fencing: extend %q: %w", m.key, err)
	}
	if n != 1 {
		err := fmt.Errorf("%w: extend %q: expired or taken over", ErrNotHeld, m.key)
		if held, ours := m.forget(value); ours {
			m.lost(held, err)
		}
		return err
	}
	m.mu.Lock()
	if m.value == value {
		m.until = start.Add(time.Duration(ms) * time.Millisecond)
	}
	m.mu.Unlock()
	return nil
}

// check returns the error every method returns before it sends anything:
// the invalid arguments New found, or that New did not make m.
func (m *Mutex) check() error {
	if m == nil {
		return invalid(frame.NotMade)
	}
	return m.f.Check(ErrInvalid)
}

// heldValue returns the random value of the current hold, or, when this
// Mutex holds nothing, an error wrapping [ErrNotHeld] that names op
// ("unlock", "extend") and the key.
func (m *Mutex) heldValue(op string) (string, error) {
	m.mu.Lock()
	value := m.value
	m.mu.Unlock()
	if value == "" {
		return "", fmt.Errorf("%w: %s %q", ErrNotHeld, op, m.key)
	}
	return value, nil
}

// claimRelease returns the value of the current hold and marks it as the
// one an Unlock is releasing, so that a second Unlock of the same hold
// running at the same moment returns an error wrapping [ErrNotHeld] at
// once instead of sending the release again (which its receipt would
// answer as done: two callers told they released one hold). releaseDone
// clears the mark; a release whose outcome is unknown keeps the hold, and
// Unlock may be called again.
func (m *Mutex) claimRelease() (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.value == "" || m.releasing == m.value {
		return "", fmt.Errorf("%w: unlock %q", ErrNotHeld, m.key)
	}
	m.releasing = m.value
	return m.value, nil
}

// releaseDone clears the mark claimRelease set for value.
func (m *Mutex) releaseDone(value string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.releasing == value {
		m.releasing = ""
	}
}

// forget clears the hold if it is still the one with value, and returns
// how long it was held. It reports false when another call (a concurrent
// Unlock or Extend, or a new Lock) had already ended that hold, so that
// each hold is reported ended once.
func (m *Mutex) forget(value string) (time.Duration, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.value != value {
		return 0, false
	}
	held := time.Since(m.since)
	m.value, m.token, m.until, m.since = "", 0, time.Time{}, time.Time{}
	return held, true
}

// lost tells the observer that Unlock or Extend found the lock lost after
// held.
func (m *Mutex) lost(held time.Duration, err error) {
	m.f.Report(observe.Lost, held, err)
}

// releaseLost deletes the lock if an attempt whose reply was lost took it
// with value, and marks value released (its receipt), so that the attempt,
// should it still be on its way, takes nothing when it lands. It is best
// effort: if it fails too, the lease ends the lock. It is sent as EVAL,
// with the script's source, not EVALSHA: a server that lost its script
// cache (a restart, a failover) answers an EVALSHA held up in the network
// with NOSCRIPT when it lands, with nobody left waiting to send EVAL.
func (m *Mutex) releaseLost(ctx context.Context, value string) {
	rctx, cancel := retry.Detach(ctx)
	defer cancel()
	_ = releaseScript.Eval(rctx, m.client, m.releaseKeys(value), value, m.receipt).Err()
}
