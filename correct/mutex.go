package correct

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/args"
	"github.com/locklab/locklab/internal/keyslot"
	"github.com/locklab/locklab/internal/preflight"
	"github.com/locklab/locklab/internal/retry"
	"github.com/locklab/locklab/internal/token"
	"github.com/locklab/locklab/observe"
)

// receiptMS is how long a release's receipt lives, for the scripts.
var receiptMS = retry.ReceiptMS

// The release script's fixed arguments, made interface values once: each
// conversion at the call would allocate, on every Unlock.
var (
	receiptArg any = receiptMS
	channelArg any = channelPrefix
	keepArg    any = "0" // release.lua's abandon flag: a release
	abandonArg any = "1" // a waiter giving up
)

// Client is the part of a go-redis client that a [Mutex] uses: scripts
// (EVALSHA, EVAL) and SET with options. *redis.Client (including the
// Sentinel-backed one from redis.NewFailoverClient), *redis.ClusterClient,
// *redis.Ring and redis.UniversalClient all satisfy it, and so does any
// wrapper that forwards these methods, for example to inject faults.
type Client interface {
	redis.Scripter
	SetArgs(ctx context.Context, key string, value any, a redis.SetArgs) *redis.StatusCmd
}

// Mutex is a lock on one Redis key. It is not reentrant: see [Mutex.Lock].
//
// A Mutex must be made by [New]; the zero value is not usable (its methods
// return an error wrapping [ErrInvalid]). A Mutex must not be copied after
// first use. Its methods are safe for concurrent use; like a sync.Mutex it
// is one holder, so any goroutine may Unlock what another locked. Give each
// party that must exclude the others its own Mutex on the same key.
type Mutex struct {
	client Client
	key    string
	base   string // the prefix of the keys kept beside key (keyslot.Base)
	queue  string // the wait queue's key
	o      options
	wait   waiter // how Lock waits for its turn: &polling or queue
	// polling is the poll waiter, kept here so that New allocates it with
	// the Mutex.
	polling poll
	err     error // invalid arguments found by New, returned by every method

	// The fields above are set by New and never change.

	// contended hints that other clients are waiting: the last acquisition
	// had to queue, or the last Unlock handed the lock over. Lock with a
	// Notifier then queues at once instead of trying SET NX first.
	contended atomic.Bool

	mu        sync.Mutex // protects token, releasing, until and since
	token     string     // our value in the key; "" when not held
	releasing string     // the token an Unlock is releasing now; see claimRelease
	until     time.Time  // local expiry estimate; zero when not held
	since     time.Time  // when this hold began, for observers
}

// New returns a Mutex for key, using client to reach Redis. It sends
// nothing to Redis. New never fails: if client is nil (or a nil pointer),
// key is empty or an option is invalid, every method of the returned Mutex
// that talks to Redis reports it with an error wrapping [ErrInvalid]. So
// it does for a *redis.AutoPipeliner configured with Unordered: true (see
// the package doc, "Auto-pipelined clients").
//
// Besides key, a Mutex uses keys that share key's Redis Cluster slot: the
// wait queue, "<base>:q", and short-lived release receipts,
// "<base>:r:<token>", where base is "{key}" for a key without a hash tag
// (and key itself for one with a tag, such as "lock:{orders}:7").
func New(client Client, key string, opts ...Option) *Mutex {
	o, err := newOptions(opts)
	errs := []error{err}
	if args.IsNil(client) {
		errs = append(errs, invalid("nil client"))
	}
	if key == "" {
		errs = append(errs, invalid("empty key"))
	}
	client, err = preflight.Bound(client)
	if err != nil {
		errs = append(errs, invalid("client: %v", err))
	}
	m := &Mutex{client: client, key: key, o: o, err: errors.Join(errs...)}
	if key != "" {
		m.base = keyslot.Base(key)
		m.queue = m.base + ":q"
	}
	m.polling = poll{policy: o.retry}
	m.wait = &m.polling
	if o.notifier != nil {
		m.wait = queue{n: o.notifier}
	}
	return m
}

// Lock acquires the lock, waiting while another holder has it. It returns
// nil once the lock is held; [ErrNotObtained] when it ran out of tries (see
// [WithTries]); errors.Join(ErrNotObtained, ctx.Err()) when ctx ended
// first, without touching Redis if ctx had already ended; and a wrapped
// error, at once, if Redis cannot be reached, answers with an error, or is
// unfit for a lock (it evicts keys, or the user may not run the scripts;
// see [WithEvictionCheck]). Lock does not retry transport errors: a lock
// that keeps polling a dead Redis hides the outage, and the caller knows
// better whether to wait or fail.
//
// Each try writes a fresh 128-bit token with SET key token NX PX ttl. A
// try must be safe to send twice: when the reply is lost and go-redis
// sends the SET again, the second one is refused by our own token. So a
// refused try asks once whether the key holds its token (with a Notifier
// the queue's join asks, in the same step), and the tries after it in the
// same Lock send SET ... GET, which answers that itself: Lock knows the
// lock is ours instead of waiting a whole TTL for itself. (The first try
// leaves out GET because a free lock is the common case, and go-redis
// takes GET's nil reply for an error: 21 allocations more per Lock and
// Unlock.) When Lock fails, it leaves no key of its own behind: if a SET
// got no reply at all, it deletes the key in case the SET landed (only if
// Redis is unreachable for that too may the key stay, until its TTL; the
// error then says so).
//
// Lock returns nil only with at least half the TTL left to run. The lease
// counts from just before the SET that took the lock was sent (for a lock
// handed over by a [Notifier], from the last moment known to come before
// the hand-off), never from its answer, so a slow answer eats into it. An
// acquisition whose answer comes back with less than half the TTL left is
// not handed to the caller: Lock renews a handed-over lock first
// (owner-checked, counted again from that renewal's send); otherwise, or
// when the renewal too comes back with less than half left, it gives the
// lock back at once (to the next waiter in the queue, if any), rather than
// leave the key held by nobody until it expires, and tries again (with a
// Notifier, it queues again). So when Lock returns nil, time.Until(m.Until())
// is at least ttl/2, less only the instant Lock takes to return. On a link
// whose round trip takes half the TTL or more, Lock never gets the lock: it
// ends with ctx or its tries, and its error says how late the last answer
// came. Choose a TTL many times the round trip.
//
// Lock is not reentrant. Locking a Mutex that already holds the lock does
// not touch the held lock; it waits like any other client, until the lock
// is unlocked (by another goroutine), expires after its TTL, or ctx ends.
// Called again by the holder itself, that is a self-deadlock that lasts
// until the TTL runs out; package reentrant counts re-entries instead.
func (m *Mutex) Lock(ctx context.Context) error {
	if err := m.check(); err != nil {
		return err
	}
	return preflight.Lock(ctx, m.o.observer, "correct", m.key, m.ready, func(ctx context.Context) error {
		return m.wait.wait(ctx, m)
	})
}

// TryLock makes one attempt to acquire the lock. It returns (true, nil) if
// it got it and (false, nil) if another holder has it. Errors are as for
// [Mutex.Lock], except that it never runs out of tries; and an attempt that
// took the lock but whose answer came back with less than half the TTL left
// (see Lock) gives the lock back and returns false with an error wrapping
// [ErrNotObtained] that says so.
func (m *Mutex) TryLock(ctx context.Context) (bool, error) {
	if err := m.check(); err != nil {
		return false, err
	}
	return preflight.Attempt(ctx, m.o.observer, "correct", m.key, m.ready, func(ctx context.Context) (bool, error) {
		return m.acquire(ctx, m.contended.Load())
	})
}

// ready returns an error if ctx has ended or the server is unfit for a
// lock (see package preflight); the check runs once a minute per server.
func (m *Mutex) ready(ctx context.Context) error {
	return preflight.Ready(ctx, "correct", m.key, m.client, m.o.evictionCheck, ErrNotObtained, func(ctx context.Context) error {
		_, err := m.release(ctx, preflight.ProbeToken, false)
		return errors.Unwrap(err)
	})
}

// acquire makes one attempt with a fresh token: SET key token NX PX ttl,
// with GET when get is set (a refusal is likely). A SET NX can succeed
// only when the key is absent, so it never overwrites a lock that is
// held. With GET it returns what the key held: nothing when it set the
// key, our own token when this is the SET sent a second time, someone
// else's token when the lock is taken. Without GET a refusal does not say
// whose token it met, so acquire asks (ttl.lua, which only reads).
func (m *Mutex) acquire(ctx context.Context, get bool) (bool, error) {
	return m.acquireAs(ctx, token.New(), get, !get)
}

// acquireAs is acquire with tok, and with the refusal's check (ttl.lua)
// only when check is set: a caller that leaves it out must find out
// another way whether a refusal met tok itself (the queue's join does:
// enqueue.lua answers 2 when the key holds the joining token).
func (m *Mutex) acquireAs(ctx context.Context, tok string, get, check bool) (bool, error) {
	if err := retry.CtxErr(ctx); err != nil {
		return false, errors.Join(ErrNotObtained, err)
	}
	start := time.Now() // before the SET is sent; see Until
	old, err := m.client.SetArgs(ctx, m.key, tok, redis.SetArgs{Mode: "NX", TTL: m.o.ttl, Get: get}).Result()
	ours := false
	switch {
	case get && errors.Is(err, redis.Nil), get && err == nil && old == tok, !get && err == nil:
		ours = true // set now, or by the first run of this SET
	case get && err == nil:
		// The key holds another token: someone holds the lock.
	case check && errors.Is(err, redis.Nil):
		// Refused, perhaps by our own first run of this SET.
		var ms int64
		ms, err = ttlScript.Run(ctx, m.client, []string{m.key}, tok).Int64()
		ours = err == nil && ms != -2
	}
	if err != nil && !errors.Is(err, redis.Nil) {
		// No reply does not mean Redis did not run the SET: the reply may
		// have been lost, or ctx may have ended while it was on the wire.
		// Delete the key if it holds our token, so a failed attempt never
		// leaves a lock behind that nobody will release.
		_, relErr := m.release(ctx, tok, false)
		if cerr := retry.CtxErr(ctx); cerr != nil {
			return false, errors.Join(ErrNotObtained, cerr, relErr)
		}
		return false, errors.Join(fmt.Errorf("correct: acquire %q: %w", m.key, err), relErr)
	}
	if !ours {
		return false, nil
	}
	if m.short(start) {
		return false, m.tooLate(ctx, tok, start, "SET")
	}
	m.hold(tok, start)
	m.at(ctx, HookAcquired)
	return true, nil
}

// short reports whether a lease counted from leaseStart has less than half
// the TTL left to run: too little to hand to the caller (see Lock). Half,
// because a holder that keeps the TTL several times its work (the package
// doc's advice) still has its work's time and more; and because a waiter
// looks at the lock every ttl/4, a hand-off it finds by looking on a fast
// link still has about three quarters left and costs no renewal.
func (m *Mutex) short(leaseStart time.Time) bool {
	return time.Until(leaseStart.Add(m.o.ttl)) < m.o.ttl/2
}

// A shortLease is the error of an acquisition that took the lock but
// learnt so late that less than half the TTL was left, and gave it back:
// Lock tries again; TryLock returns it. It wraps ErrNotObtained.
type shortLease struct{ error }

func (e shortLease) Unwrap() error { return e.error }

// isShort reports whether err is exactly a shortLease (no transport error
// joined to it).
func isShort(err error) bool {
	_, ok := err.(shortLease)
	return ok
}

// tooLate gives back the lock that tok holds, whose lease counted from sent
// (when what, the command that gave or renewed it, was sent) is too short
// to return: it releases the key owner-checked (which hands it to the next
// waiter, if any), detached from ctx's cancellation as Unlock is, so that
// the key is not left held by nobody until its TTL. It returns a shortLease,
// or, if the release failed, that failure joined to its message.
func (m *Mutex) tooLate(ctx context.Context, tok string, sent time.Time, what string) error {
	err := fmt.Errorf("%w: %q: the %s's answer came %v after it was sent, leaving less than half the %v ttl; the lock was given back",
		ErrNotObtained, m.key, what, time.Since(sent).Round(time.Millisecond), m.o.ttl)
	if _, relErr := m.release(ctx, tok, false); relErr != nil {
		return errors.Join(err, relErr)
	}
	return shortLease{err}
}

// Unlock releases the lock if this Mutex still holds it: the release script
// deletes the key, or hands it to the oldest live waiter, only if it still
// holds this Mutex's token. It returns [ErrNotHeld], leaving the key alone,
// if the lock was never acquired, was already released, or expired (and
// perhaps now belongs to someone else). A release sent twice (its reply
// lost) answers the second time as it did the first, from a receipt it
// left (see release.lua).
//
// Unlock ignores the cancellation and deadline of ctx (it keeps its
// values), and bounds the release by its own timeout of 2s instead. The
// common bug it avoids is
//
//	defer m.Unlock(ctx)
//
// with a request context that has been cancelled by the time the deferred
// call runs: the release would fail at once, and the lock would stay held
// for a whole TTL, blocking everyone else.
//
// On a transport error the outcome is unknown, so the Mutex keeps its token
// and Unlock may be called again; if it never succeeds, the key expires
// after its TTL.
func (m *Mutex) Unlock(ctx context.Context) error {
	if err := m.check(); err != nil {
		return err
	}
	tok := m.claimRelease()
	if tok == "" {
		return ErrNotHeld
	}
	defer m.releaseDone(tok)
	m.at(ctx, HookBeforeRelease)
	code, err := m.release(ctx, tok, false)
	if err != nil {
		return err
	}
	held := m.forget(tok)
	if code == 0 {
		m.lost(held)
		return ErrNotHeld
	}
	if m.o.observer != nil {
		m.emit(observe.Event{Kind: observe.Released, Held: held})
	}
	return nil
}

// release runs the release script for tok, detached from ctx's
// cancellation and bounded by retry.ReleaseTimeout: it deletes the key, or
// hands the lock to the oldest live waiter in the queue, if the key holds
// tok. With abandon it first takes tok out of the queue (a waiter giving
// up). It returns the script's code: 1 deleted, 2 handed over, 0 not ours.
func (m *Mutex) release(ctx context.Context, tok string, abandon bool) (int64, error) {
	ctx, cancel := retry.Detach(ctx)
	defer cancel()
	flag := keepArg
	if abandon {
		flag = abandonArg
	}
	keys := []string{m.key, m.queue, m.receipt(tok)}
	n, err := releaseScript.Run(ctx, m.client, keys, tok, channelArg, flag, receiptArg).Int64()
	if err != nil {
		return 0, fmt.Errorf("correct: release %q: %w", m.key, err)
	}
	if n != 0 {
		m.contended.Store(n == 2) // 2: handed to a waiter
	}
	return n, nil
}

// receipt is the key of the receipt a release of tok leaves.
func (m *Mutex) receipt(tok string) string { return keyslot.Receipt(m.base, tok) }

// Extend sets the lock's TTL to ttl, counted from now, if this Mutex still
// holds the lock, and moves [Mutex.Until] accordingly; ttl may be shorter
// than what is left. It returns [ErrNotHeld], changing nothing in Redis, if
// the lock is not held (never acquired, unlocked, expired, taken over). If
// ttl is under one millisecond it returns an error wrapping [ErrInvalid].
// Unlike Unlock, Extend honours ctx: an extension that comes too late is no
// use.
//
// Extend cannot revive an expired lock, and a holder that extends only
// after a pause may find that it has been holding nothing; see the package
// doc.
func (m *Mutex) Extend(ctx context.Context, ttl time.Duration) error {
	if err := m.check(); err != nil {
		return err
	}
	if ttl < time.Millisecond {
		return invalid("Extend(ctx, %v): ttl must be at least 1ms", ttl)
	}
	ttl = ttl.Truncate(time.Millisecond) // what PEXPIRE will say
	tok := m.Token()
	if tok == "" {
		return ErrNotHeld
	}
	start := time.Now() // before the script is sent, as in acquire
	n, err := extendScript.Run(ctx, m.client, []string{m.key}, tok, ttl.Milliseconds()).Int64()
	if err != nil {
		return fmt.Errorf("correct: extend %q: %w", m.key, err)
	}
	if n != 1 {
		m.lost(m.forget(tok))
		return ErrNotHeld
	}
	m.mu.Lock()
	if m.token == tok { // not unlocked by another goroutine meanwhile
		m.until = start.Add(ttl)
	}
	m.mu.Unlock()
	return nil
}

// TTL returns the lock's remaining time to live as Redis sees it. It
// returns [ErrNotHeld] if this Mutex does not hold the lock (never
// acquired, unlocked, expired, taken over). The answer is already stale
// when it arrives, by the reply's travel time; for decisions, prefer the
// conservative [Mutex.Until].
func (m *Mutex) TTL(ctx context.Context) (time.Duration, error) {
	if err := m.check(); err != nil {
		return 0, err
	}
	tok := m.Token()
	if tok == "" {
		return 0, ErrNotHeld
	}
	ms, err := ttlScript.Run(ctx, m.client, []string{m.key}, tok).Int64()
	switch {
	case err != nil:
		return 0, fmt.Errorf("correct: ttl %q: %w", m.key, err)
	case ms == -2:
		m.lost(m.forget(tok))
		return 0, ErrNotHeld
	case ms < 0:
		return 0, fmt.Errorf("correct: ttl %q: the key holds our token but has no TTL (PERSIST?)", m.key)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// Until returns the time before which the lock is certainly still held, if
// nothing else touches the key: the moment the SET (or the last
// successful Extend) was sent, plus the TTL. It is read from the local
// monotonic clock and errs early, never late; the package doc argues why.
// When Lock or TryLock has just taken the lock, Until is at least half the
// TTL away (see [Mutex.Lock]).
// It returns the zero time when the Mutex does not hold the lock as far as
// it knows (never acquired, unlocked, or found lost by Unlock, Extend or
// TTL). A time in the past means the lock may have expired.
func (m *Mutex) Until() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.until
}

// Token returns the random value this Mutex wrote into the key when it
// acquired the lock, or "" when it does not hold the lock as far as it
// knows (see [Mutex.Until]). A new token is made for every acquisition.
func (m *Mutex) Token() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.token
}

// Key returns the Redis key the Mutex locks.
func (m *Mutex) Key() string { return m.key }

// hold records tok as held, with a lease counted from leaseStart.
func (m *Mutex) hold(tok string, leaseStart time.Time) {
	m.mu.Lock()
	m.token, m.until, m.since = tok, leaseStart.Add(m.o.ttl), time.Now()
	m.mu.Unlock()
}

// claimRelease returns the token of the current hold and marks it as the
// one an Unlock is releasing, so that a second Unlock of the same hold
// running at the same moment finds nothing to release (and says
// ErrNotHeld) instead of sending the release again, which the release's
// receipt would answer as done: two callers told they released one hold.
// It returns "" when there is no hold to release. releaseDone clears the
// mark; a release whose outcome is unknown keeps the hold, and Unlock may
// be called again.
func (m *Mutex) claimRelease() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.token == "" || m.releasing == m.token {
		return ""
	}
	m.releasing = m.token
	return m.token
}

// releaseDone clears the mark claimRelease set for tok.
func (m *Mutex) releaseDone(tok string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.releasing == tok {
		m.releasing = ""
	}
}

// forget clears the held state if it still belongs to tok (a concurrent
// Lock may already have replaced it with a newer acquisition) and returns
// how long it was held.
func (m *Mutex) forget(tok string) time.Duration {
	if n := m.o.notifier; n != nil {
		n.unregister(tok) // a hand-off hold: its token is no longer ours
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.token != tok {
		return 0
	}
	held := time.Since(m.since)
	m.token, m.until, m.since = "", time.Time{}, time.Time{}
	return held
}

// lost tells the observer that the lock was found lost after held.
func (m *Mutex) lost(held time.Duration) {
	if m.o.observer != nil {
		m.emit(observe.Event{Kind: observe.Lost, Held: held, Err: ErrNotHeld})
	}
}

// emit sends e, filled in with the lock's name and key, to the observer.
func (m *Mutex) emit(e observe.Event) {
	e.Lock, e.Key = "correct", m.key
	m.o.observer(e)
}

// check returns the error found by New, or an error for a Mutex that New
// did not make.
func (m *Mutex) check() error {
	if m == nil || m.wait == nil {
		return invalid("Mutex not made by New")
	}
	return m.err
}

// at calls the hook, if any, at the named step.
func (m *Mutex) at(ctx context.Context, point string) {
	if m.o.hook != nil {
		m.o.hook(ctx, point)
	}
}
