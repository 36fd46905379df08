package watchdog

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
	"github.com/locklab/locklab/internal/take"
	"github.com/locklab/locklab/internal/token"
	"github.com/locklab/locklab/observe"
)

// Client is the part of a go-redis client the Mutex uses: scripts (every
// command it sends is one). *redis.Client, *redis.ClusterClient,
// *redis.Ring and failover clients all satisfy it.
type Client interface {
	redis.Scripter
}

// notHeldCtx is what Context returns before the first Lock.
var notHeldCtx = func() context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(ErrNotHeld)
	return ctx
}()

// Mutex is a lock on one Redis key that renews itself while held. Create
// it with [New]; the zero value is not usable. A Mutex must not be copied
// after first use. Its methods are safe for concurrent use; as with
// sync.Mutex, the lock belongs to the Mutex, not to a goroutine.
type Mutex struct {
	client  Client
	key     string
	base    string // the prefix of the keys kept beside key (receipts)
	o       options
	ttlMS   any            // o.ttl in milliseconds, as take.lua takes it
	receipt string         // how long a release's receipt lives (retry.ReceiptFor)
	f       frame.Frame    // the argument error, the hook and the observer
	gate    preflight.Gate // the server's check before Lock and TryLock

	// The fields above are set by New and never change.

	mu   sync.Mutex // protects hold and hold.unlocked
	hold *hold      // the current or last hold; nil before the first Lock
}

// hold is one acquisition: its token and the lease renewing it.
type hold struct {
	token    string
	since    time.Time // when the SET that took the lock was sent
	lease    *Lease
	unlocked bool // Unlock was called for this hold
}

// New returns a Mutex for key. New is required: it applies the options
// and checks the arguments. An invalid argument (nil client, empty key, an
// option out of range) is reported by every method as an error wrapping
// [ErrInvalid].
func New(client Client, key string, opts ...Option) *Mutex {
	o, err := newOptions(opts)
	if err == nil {
		err = args.Target(ErrInvalid, client, key)
	}
	client, cerr := preflight.Bound(client) // an AutoPipeliner waits for replies only until ctx ends
	if err == nil && cerr != nil {
		err = invalid("client: %v", cerr)
	}
	base := "" // an empty key (invalid) has no keys beside it
	if key != "" {
		base = keyslot.Base(key)
	}
	return &Mutex{
		client:  client,
		key:     key,
		base:    base,
		o:       o,
		ttlMS:   o.ttl.Milliseconds(),
		receipt: retry.ReceiptFor(o.ttl),
		f:       frame.Frame{Kind: "watchdog", Key: key, Err: err, Hook: o.hook, Obs: o.observer},
		gate: preflight.Gate{
			Pkg: "watchdog", Key: key, Client: client, Eviction: o.evictionCheck, NotObtained: ErrNotObtained,
			Probe: preflight.Probe{
				Script: releaseScript,
				Keys:   []string{key, keyslot.Receipt(base, preflight.ProbeToken)},
				Args:   []any{preflight.ProbeToken, "0"}, // no receipt
			},
		},
	}
}

// Key returns the Redis key of the lock.
func (m *Mutex) Key() string { return m.key }

// Lock blocks until it holds the lock, ctx ends, or the tries set by
// [WithTries] are used up; it returns nil only when it holds the lock.
// Between tries it waits as [WithRetry] says. When it gives up, it returns
// [ErrNotObtained] (joined with ctx.Err() if ctx ended) and leaves no key
// behind. A transport error is returned at once, wrapped.
//
// ctx is the holder's context: the refresher renews the lock until
// [Mutex.Unlock] or until ctx ends, and then releases it. A ctx with a
// deadline therefore bounds the hold as well as the wait. Work done under
// the lock should watch [Mutex.Context] or [Mutex.Done].
//
// Lock returns nil only with at least half the TTL left of the first
// lease, counted from just before the SET was sent: a SET whose answer
// comes later is given back at once (owner-checked) and Lock tries again,
// so that Done is never closed, nor the key gone, when Lock returns. A link
// whose round trip takes half the TTL never gets the lock; TryLock then
// returns false with an error wrapping [ErrNotObtained] that says so.
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

// check returns the error every method returns before it sends anything:
// the invalid arguments New found, or that New did not make m.
func (m *Mutex) check() error {
	if m == nil {
		return invalid(frame.NotMade)
	}
	return m.f.Check(ErrInvalid)
}

// TryLock tries once to take the lock. It reports (false, nil) when
// another holder has it. On success the lock is renewed as for
// [Mutex.Lock], and ctx is the holder's context.
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

// try makes one attempt with a fresh token: internal/take's take.lua, SET
// key token NX PX ttl as a script that says whose token a refusal met, so
// it is safe to send twice (a try whose reply was lost and that go-redis
// sent again finds our own token, and the lock is ours), and that takes
// nothing for a token already released (a try held up in the network that
// lands after this one gave up and released it).
func (m *Mutex) try(ctx context.Context) (bool, error) {
	if err := retry.CtxErr(ctx); err != nil {
		return false, errors.Join(ErrNotObtained, err)
	}
	tok := token.New()
	m.f.At(ctx, HookBeforeAcquire)
	start := time.Now()
	code, _, err := take.Run(ctx, m.client, m.key, keyslot.Receipt(m.base, tok), tok, m.ttlMS)
	switch {
	case err == nil && take.Held(code):
		err = retry.CtxErr(ctx) // ours: set now, or by the first run of this script
	case err == nil:
		return false, nil // taken, or tok released already (never, for a live try)
	}
	if err != nil {
		// The try may have reached Redis even though its reply did not
		// reach us, or may still be on its way; the owner-checked release
		// removes our key if so, and marks tok released (see giveUp).
		m.giveUp(ctx, tok)
		return false, retry.Failed(ctx, ErrNotObtained, fmt.Errorf("watchdog: acquire %q: %w", m.key, err))
	}
	if frame.Late(start, m.o.ttl) {
		// The answer came with less than half the lease left: give the key
		// back rather than return a lease that is over, or nearly (see Lock).
		err := m.f.TooLate(ErrNotObtained, "SET", start, m.o.ttl, "the lock was given back")
		if relErr := m.release(ctx, tok); relErr != nil && !errors.Is(relErr, ErrNotHeld) {
			return false, errors.Join(err, relErr) // ErrNotHeld: expired already
		}
		return false, frame.Short{Err: err}
	}
	h := &hold{token: tok, since: start}
	var lost func(cause error)
	if m.f.Obs != nil {
		lost = func(cause error) { m.f.Report(observe.Lost, time.Since(h.since), cause) }
	}
	h.lease = startLease(ctx, extender{m, tok}, m.o, start, func(ctx context.Context) { m.report(h, m.release(ctx, tok)) }, lost)
	m.mu.Lock()
	old := m.hold
	m.hold = h
	m.mu.Unlock()
	if old != nil {
		// SET NX succeeded, so an earlier hold of this Mutex is over even
		// if its refresher has not noticed yet.
		old.lease.end(endLost, fmt.Errorf("watchdog: %q was acquired again by this Mutex: %w", m.key, ErrNotHeld))
	}
	m.f.At(ctx, HookAcquired)
	return true, nil
}

// Unlock stops the renewal, waits for the refresher to exit, and deletes
// the key if it still holds this Mutex's token. It cancels [Mutex.Context]
// with cause [ErrReleased]. It returns an error wrapping [ErrNotHeld] when
// the Mutex did not hold the lock: never locked, unlocked twice, or the
// hold ended earlier; then the error also wraps that earlier cause (lost,
// [ErrMaxHold], or the Lock context's error).
//
// Unlock releases the lock even if ctx is already cancelled: it then uses
// context.WithoutCancel(ctx) bounded by 2s.
func (m *Mutex) Unlock(ctx context.Context) error {
	if err := m.check(); err != nil {
		return err
	}
	m.mu.Lock()
	h := m.hold
	if h == nil || h.unlocked {
		m.mu.Unlock()
		return fmt.Errorf("watchdog: unlock %q: %w", m.key, ErrNotHeld)
	}
	h.unlocked = true
	m.mu.Unlock()
	// Stop first: once it returns no renewal is in flight, so none can
	// land after the release (Redisson #7272). The owner check in
	// extend.lua would refuse it anyway.
	if cause := h.lease.Stop(); cause != nil {
		return fmt.Errorf("watchdog: unlock %q: %w; the hold had ended: %w", m.key, ErrNotHeld, cause)
	}
	err := m.release(ctx, h.token)
	m.report(h, err)
	return err
}

// report tells the observer how the release of hold h ended: Released if
// it deleted the key, Lost if the key no longer held h's token. After a
// transport error the key is left to its TTL and nothing is reported.
func (m *Mutex) report(h *hold, err error) {
	switch {
	case err == nil:
		m.f.Report(observe.Released, time.Since(h.since), nil)
	case errors.Is(err, ErrNotHeld):
		m.f.Report(observe.Lost, time.Since(h.since), err)
	}
}

// release runs the owner-checked delete for tok, with ctx's values but not
// its cancellation, bounded by retry.ReleaseTimeout (a release must run
// even after the caller's context ended).
func (m *Mutex) release(ctx context.Context, tok string) error {
	ctx, cancel := retry.Detach(ctx)
	defer cancel()
	m.f.At(ctx, HookBeforeRelease)
	if err := m.runRelease(ctx, tok); err != nil {
		if !errors.Is(err, ErrNotHeld) {
			err = fmt.Errorf("watchdog: release %q: %w", m.key, err)
		}
		return err
	}
	m.f.At(ctx, HookReleased)
	return nil
}

// giveUp releases tok for a try that got no answer, detached from ctx's
// cancellation: it deletes the key if the try took it, and leaves tok's
// receipt, so that the try, should it still be on its way, takes nothing
// when it lands. It is sent as EVAL, with the script's source, not
// EVALSHA: a server that lost its script cache (a restart, a failover)
// answers an EVALSHA held up in the network with NOSCRIPT when it lands,
// with nobody left waiting to send EVAL. It is best effort: if it fails
// too, the key ends with its TTL.
func (m *Mutex) giveUp(ctx context.Context, tok string) {
	ctx, cancel := retry.Detach(ctx)
	defer cancel()
	_ = releaseScript.Eval(ctx, m.client, []string{m.key, keyslot.Receipt(m.base, tok)}, tok, m.receipt).Err()
}

// runRelease runs release.lua for tok: nil when it deleted the key (now or
// in an earlier run, per its receipt), an error wrapping ErrNotHeld when
// the key was not tok's.
func (m *Mutex) runRelease(ctx context.Context, tok string) error {
	n, err := releaseScript.Run(ctx, m.client, []string{m.key, keyslot.Receipt(m.base, tok)}, tok, m.receipt).Int()
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("watchdog: release %q: %w", m.key, ErrNotHeld)
	}
	return nil
}

// Context returns the holder's context of the current or last hold (see
// [Lease.Context]): derived from the ctx given to Lock, cancelled with a
// cause when the hold ends. Before the first Lock it returns a context
// already cancelled with cause [ErrNotHeld].
func (m *Mutex) Context() context.Context {
	m.mu.Lock()
	h := m.hold
	m.mu.Unlock()
	if h == nil {
		return notHeldCtx
	}
	return h.lease.Context()
}

// Done returns a channel closed when the current or last hold ends: lost,
// unlocked, capped, or its Lock context ended. Before the first Lock it
// returns a closed channel.
func (m *Mutex) Done() <-chan struct{} { return m.Context().Done() }

// extender renews one hold of a Mutex, identified by its token.
type extender struct {
	m   *Mutex
	tok string
}

func (x extender) Extend(ctx context.Context, ttl time.Duration) error {
	n, err := extendScript.Run(ctx, x.m.client, []string{x.m.key}, x.tok, ttl.Milliseconds()).Int()
	if err != nil {
		return fmt.Errorf("watchdog: extend %q: %w", x.m.key, err)
	}
	if n == 0 {
		return fmt.Errorf("watchdog: extend %q: %w", x.m.key, ErrNotHeld)
	}
	return nil
}
