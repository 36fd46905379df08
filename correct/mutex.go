package correct

import (
	"context"
	"fmt"
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

// The release script's fixed arguments, made interface values once: each
// conversion at the call would allocate, on every Unlock.
var (
	channelArg any = channelPrefix
	keepArg    any = "0" // release.lua's abandon flag: a release
	abandonArg any = "1" // a waiter giving up

	// probeArgs are the preflight probe's arguments (release.lua for
	// preflight.ProbeToken, leaving no receipt), the same for every Mutex.
	probeArgs = []any{preflight.ProbeToken, channelArg, keepArg, "0"}
)

// Client is the part of a go-redis client that a [Mutex] uses: scripts
// (EVALSHA, EVAL); every command it sends is one. *redis.Client (including the
// Sentinel-backed one from redis.NewFailoverClient), *redis.ClusterClient,
// *redis.Ring and redis.UniversalClient all satisfy it, and so does any
// wrapper that forwards these methods, for example to inject faults.
type Client interface {
	redis.Scripter
}

// Mutex is a lock on one Redis key. It is not reentrant: see [Mutex.Lock].
//
// A Mutex must be made by [New]; the zero value is not usable (its methods
// return an error wrapping [ErrInvalid]). A Mutex must not be copied after
// first use. Its methods are safe for concurrent use; like a sync.Mutex it
// is one holder, so any goroutine may Unlock what another locked. Give each
// party that must exclude the others its own Mutex on the same key.
type Mutex struct {
	f       frame.Frame // the argument error, the hook and the observer (read first)
	h       holder      // the key, its commands and the current hold
	wait    waiter      // how Lock waits for its turn: &polling or queue
	polling poll        // the poll waiter, kept here so that New allocates it with the Mutex

	// evictionCheck is WithEvictionCheck's, for the gate (see pass).
	evictionCheck bool

	// The fields above are set by New and never change (the holder's hold
	// does: see holder).
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
	if err == nil {
		err = args.Target(ErrInvalid, client, key)
	}
	client, cerr := preflight.Bound(client) // an AutoPipeliner waits for replies only until ctx ends
	if err == nil && cerr != nil {
		err = invalid("client: %v", cerr)
	}
	base, queueKey := "", "" // an empty key (invalid) has no keys beside it
	if key != "" {
		base = keyslot.Base(key)
		queueKey = base + ":q"
	}
	m := &Mutex{
		f:             frame.Frame{Kind: "correct", Key: key, Err: err, Hook: o.hook, Obs: o.observer},
		polling:       poll{policy: o.retry},
		evictionCheck: o.evictionCheck,
	}
	m.h = holder{
		client: client, key: key, base: base, queue: queueKey,
		ttl: o.ttl, ttlMS: o.ttl.Milliseconds(), receipt: retry.ReceiptFor(o.ttl),
		notifier: o.notifier, f: &m.f,
	}
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
// Each try writes a fresh 128-bit token with take.lua (SET key token NX
// PX ttl, unless the token was released already). A try is safe to send
// twice: when the reply is lost and go-redis sends it again, the second
// run finds the try's own token, and Lock finds the lock its own instead
// of waiting a whole TTL for itself. When Lock fails, it leaves no key of
// its own behind: if a try got no reply at all, Lock releases its token,
// deleting the key in case the try landed, and marking the token released
// so that a try still on its way (held up in the network) takes nothing
// when it lands (only if Redis is unreachable for that too may the key
// stay, until its TTL; the error then says so).
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
	start := time.Now()
	sent, err := m.pass(ctx, start)
	if err == nil {
		err = m.wait.wait(ctx, &m.h, sent)
	}
	m.f.Attempted(start, err == nil, err)
	return err
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
	start := time.Now()
	ok, sent, err := false, time.Time{}, error(nil)
	if sent, err = m.pass(ctx, start); err == nil {
		ok, err = m.h.acquire(ctx, token.New(), sent)
	}
	m.f.Attempted(start, ok, err)
	return ok, err
}

// pass asks the server's check before Lock and TryLock (the
// preflight.Gate), at start (when Lock or TryLock began), and returns a
// moment before which nothing of the first attempt was sent, for its
// lease to count from (see Until): start itself when the check was
// remembered, sending nothing (so a Lock reads the clock once before its
// SET, not twice), or the moment after the check's round trips.
//
// The Gate is made here, on the stack, not kept in the Mutex, and its
// probe (release.lua for preflight.ProbeToken, on this lock's keys) only
// when the check must run: after the first pass on a server, a Mutex made
// and locked once costs no probe keys and no cache lines for them.
func (m *Mutex) pass(ctx context.Context, start time.Time) (time.Time, error) {
	g := preflight.Gate{Pkg: "correct", Key: m.h.key, Client: m.h.client, Eviction: m.evictionCheck, NotObtained: ErrNotObtained}
	if done, err := g.PassRemembered(ctx, start); done {
		return start, err
	}
	g.Probe = preflight.Probe{
		Script: releaseScript,
		Keys:   []string{m.h.key, m.h.queue, keyslot.Receipt(m.h.base, preflight.ProbeToken)},
		Args:   probeArgs,
	}
	if err := g.Pass(ctx); err != nil {
		return start, err
	}
	return time.Now(), nil
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
	tok := m.h.claimRelease()
	if tok == "" {
		return ErrNotHeld
	}
	defer m.h.releaseDone(tok)
	m.f.At(ctx, HookBeforeRelease)
	code, err := m.h.release(ctx, tok, byHolder)
	if err != nil {
		return err
	}
	held := m.h.forget(tok)
	if code == 0 {
		m.f.Report(observe.Lost, held, ErrNotHeld)
		return ErrNotHeld
	}
	m.f.Report(observe.Released, held, nil)
	return nil
}

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
	ok, err := m.h.extend(ctx, tok, ttl)
	if err != nil {
		return err
	}
	if !ok {
		m.f.Report(observe.Lost, m.h.forget(tok), ErrNotHeld)
		return ErrNotHeld
	}
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
	ms, err := ttlScript.Run(ctx, m.h.client, []string{m.h.key}, tok).Int64()
	switch {
	case err != nil:
		return 0, fmt.Errorf("correct: ttl %q: %w", m.h.key, err)
	case ms == -2:
		m.f.Report(observe.Lost, m.h.forget(tok), ErrNotHeld)
		return 0, ErrNotHeld
	case ms < 0:
		return 0, fmt.Errorf("correct: ttl %q: the key holds our token but has no TTL (PERSIST?)", m.h.key)
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
	_, until := m.h.held()
	return until
}

// Token returns the random value this Mutex wrote into the key when it
// acquired the lock, or "" when it does not hold the lock as far as it
// knows (see [Mutex.Until]). A new token is made for every acquisition.
func (m *Mutex) Token() string {
	tok, _ := m.h.held()
	return tok
}

// Key returns the Redis key the Mutex locks.
func (m *Mutex) Key() string { return m.h.key }

// check returns the error every method returns before it sends anything:
// the invalid arguments New found, or that New did not make m.
func (m *Mutex) check() error {
	if m == nil {
		return invalid(frame.NotMade)
	}
	return m.f.Check(ErrInvalid)
}
