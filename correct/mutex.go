package correct

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/token"
	"github.com/locklab/locklab/observe"
)

// releaseTimeout bounds a release sent with a context that ignores the
// caller's cancellation: by [Mutex.Unlock], and by Lock or TryLock when it
// removes a key whose SET may have landed without a reply.
const releaseTimeout = 2 * time.Second

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
	ttl    time.Duration
	hook   func(ctx context.Context, point string)
	wait   waiter    // how Lock waits for its turn without a Notifier; see wait.go
	notify *Notifier // set by WithNotifier: Lock waits in the queue; see handoff.go
	obs    observe.Func
	queue  string // the wait queue's key; see queueKey
	err    error  // invalid arguments found by New, returned by every method

	// The fields above are set by New and never change.

	// contended hints that other clients are waiting: the last acquisition
	// had to queue, or the last Unlock handed the lock over. Lock with a
	// Notifier then queues at once instead of trying SET NX first.
	contended atomic.Bool

	mu    sync.Mutex // protects token, until and since
	token string     // our value in the key; "" when not held
	until time.Time  // local expiry estimate; zero when not held
	since time.Time  // when this hold began, for observers
}

// New returns a Mutex for key, using client to reach Redis. It sends
// nothing to Redis. New never fails: if client is nil (or a nil pointer),
// key is empty or an option is invalid, every method of the returned Mutex
// that talks to Redis reports it with an error wrapping [ErrInvalid].
func New(client Client, key string, opts ...Option) *Mutex {
	o, errs := newOptions(opts)
	if isNil(client) {
		errs = append(errs, fmt.Errorf("%w: nil client", ErrInvalid))
	}
	if key == "" {
		errs = append(errs, fmt.Errorf("%w: empty key", ErrInvalid))
	}
	return &Mutex{
		client: client,
		key:    key,
		ttl:    o.ttl,
		hook:   o.hook,
		wait:   poll{delay: o.delay, tries: o.tries},
		notify: o.notifier,
		obs:    o.observer,
		queue:  queueKey(key),
		err:    errors.Join(errs...),
	}
}

// Lock acquires the lock, waiting while another holder has it. It returns
// nil once the lock is held; [ErrNotObtained] when it ran out of tries (see
// [WithTries]); errors.Join(ErrNotObtained, ctx.Err()) when ctx ended
// first, without touching Redis if ctx had already ended; and a wrapped
// error, at once, if Redis cannot be reached or answers with an error. Lock
// does not retry transport errors: a lock that keeps polling a dead Redis
// hides the outage, and the caller knows better whether to wait or fail.
// When Lock fails, it leaves no key of its own behind: if a SET got no
// reply, it deletes the key in case the SET landed (only if Redis is
// unreachable for that too may the key stay, until its TTL; the error then
// says so).
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
	var err error
	if m.notify != nil {
		err = m.lockQueued(ctx)
	} else {
		err = m.wait.wait(ctx, m.acquire)
	}
	observe.Attempt(m.obs, "correct", m.key, start, err == nil, err)
	return err
}

// TryLock makes one attempt to acquire the lock. It returns (true, nil) if
// it got it and (false, nil) if another holder has it. Errors are as for
// [Mutex.Lock], except that it never runs out of tries.
func (m *Mutex) TryLock(ctx context.Context) (bool, error) {
	if err := m.check(); err != nil {
		return false, err
	}
	start := time.Now()
	ok, err := m.acquire(ctx)
	observe.Attempt(m.obs, "correct", m.key, start, ok, err)
	return ok, err
}

// acquire makes one attempt: SET key token NX PX ttl with a fresh token.
// The token is stored only if the SET succeeded; a SET NX can succeed only
// when the key is absent, so it never overwrites a lock that is held.
func (m *Mutex) acquire(ctx context.Context) (bool, error) {
	if err := ctxErr(ctx); err != nil {
		return false, errors.Join(ErrNotObtained, err)
	}
	tok := token.New()
	start := time.Now() // before the SET is sent; see Until
	// SET key tok NX PX ttl (go-redis sends EX when ttl is whole seconds).
	err := m.client.SetArgs(ctx, m.key, tok, redis.SetArgs{Mode: "NX", TTL: m.ttl}).Err()
	switch {
	case errors.Is(err, redis.Nil):
		return false, nil // the key exists: someone holds the lock
	case err != nil:
		// No reply does not mean Redis did not run the SET: the reply may
		// have been lost, or ctx may have ended while it was on the wire.
		// Delete the key if it holds our token, so a failed attempt never
		// leaves a lock behind that nobody will release.
		_, relErr := m.release(ctx, tok, false)
		if cerr := ctxErr(ctx); cerr != nil {
			return false, errors.Join(ErrNotObtained, cerr, relErr)
		}
		return false, errors.Join(fmt.Errorf("correct: acquire %q: %w", m.key, err), relErr)
	}
	m.hold(tok, start)
	m.at(ctx, HookAcquired)
	return true, nil
}

// Unlock releases the lock if this Mutex still holds it: the release script
// deletes the key only if it still holds this Mutex's token. It returns
// [ErrNotHeld], leaving the key alone, if the lock was never acquired, was
// already released, or expired (and perhaps now belongs to someone else).
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
	tok := m.Token()
	if tok == "" {
		return ErrNotHeld
	}
	m.at(ctx, HookBeforeRelease)
	deleted, err := m.release(ctx, tok, false)
	if err != nil {
		return err
	}
	held := m.forget(tok)
	if !deleted {
		m.lost(held)
		return ErrNotHeld
	}
	if m.obs != nil {
		m.emit(observe.Event{Kind: observe.Released, Held: held})
	}
	return nil
}

// release runs the release script for tok, detached from ctx's
// cancellation and bounded by releaseTimeout: it deletes the key, or hands
// the lock to the oldest live waiter in the queue, if the key holds tok.
// With dequeue it first takes tok out of the queue (a waiter giving up). It
// reports whether tok held the lock.
//
// A release before Until tells the script so: the key cannot have expired
// yet, which saves the script a read of it on a hand-off (see release.lua).
func (m *Mutex) release(ctx context.Context, tok string, dequeue bool) (bool, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	flag, inLease := "0", "0"
	if dequeue {
		flag = "1"
	} else if m.withinLease(tok) {
		inLease = "1"
	}
	n, err := releaseScript.Run(ctx, m.client, []string{m.key, m.queue}, tok, channelPrefix, flag, inLease).Int64()
	if err != nil {
		return false, fmt.Errorf("correct: release %q: %w", m.key, err)
	}
	if n != 0 {
		m.contended.Store(n == 2) // 2: handed to a waiter
	}
	return n != 0, nil
}

// withinLease reports whether tok is the held token and its lease has
// certainly not run out (now is before Until).
func (m *Mutex) withinLease(tok string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.token == tok && time.Now().Before(m.until)
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
		return fmt.Errorf("%w: Extend(ctx, %v): ttl must be at least 1ms", ErrInvalid, ttl)
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

// forget clears the held state if it still belongs to tok (a concurrent
// Lock may already have replaced it with a newer acquisition) and returns
// how long it was held.
func (m *Mutex) forget(tok string) time.Duration {
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
	if m.obs != nil {
		m.emit(observe.Event{Kind: observe.Lost, Held: held, Err: ErrNotHeld})
	}
}

// emit sends e, filled in with the lock's name and key, to the observer.
func (m *Mutex) emit(e observe.Event) {
	e.Lock, e.Key = "correct", m.key
	m.obs(e)
}

// check returns the error found by New, or an error for a Mutex that New
// did not make.
func (m *Mutex) check() error {
	if m.wait == nil {
		return fmt.Errorf("%w: Mutex not made by New", ErrInvalid)
	}
	return m.err
}

// ctxErr returns ctx.Err(), or [context.DeadlineExceeded] once ctx's
// deadline has passed even if ctx has not noticed yet: go-redis sets socket
// deadlines from ctx, and under load the socket's "i/o timeout" can come
// before the context's own timer fires. Either way the caller's deadline is
// what ended the attempt, and Lock must say so.
func ctxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
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

// at calls the hook, if any, at the named step.
func (m *Mutex) at(ctx context.Context, point string) {
	if m.hook != nil {
		m.hook(ctx, point)
	}
}
