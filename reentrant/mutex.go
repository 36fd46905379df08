package reentrant

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

// Client is the part of a go-redis client the Mutex uses: scripts.
// *redis.Client, *redis.ClusterClient, *redis.Ring and failover clients
// all satisfy it.
type Client interface {
	redis.Scripter
}

// Mutex is a counted, reentrant lock on one Redis key. The owner of each
// call is the [Owner] carried by its context ([WithOwner]). Create it with
// [New]; the zero value is not usable. A Mutex must not be copied after
// first use. It keeps no state of its own besides its configuration (and,
// with [WithObserver], when the outermost hold it saw began), so its
// methods are safe for concurrent use, and any number of Mutex values (in
// any number of processes) for the same key act as one lock.
type Mutex struct {
	client Client
	key    string
	base   string // the prefix of the keys kept beside key (receipts)
	o      options
	f      frame.Frame    // the argument error, the hook and the observer
	gate   preflight.Gate // the server's check before Lock and TryLock

	// The fields above are set by New and never change.

	mu    sync.Mutex // protects outer; used only with an observer
	outer outerHold  // the outermost hold this Mutex saw begin
}

// outerHold is an outermost hold (count 0 to 1) seen by a Mutex with an
// observer, for the Held time of its Released or Lost event. One is enough:
// a count of 1 means the key did not exist, so any hold seen before it has
// ended, released or expired.
type outerHold struct {
	owner Owner     // "" when none
	since time.Time // when the acquire script that began it was sent
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
		client: client,
		key:    key,
		base:   base,
		o:      o,
		f:      frame.Frame{Kind: "reentrant", Key: key, Err: err, Hook: o.hook, Obs: o.observer},
		gate: preflight.Gate{
			Pkg: "reentrant", Key: key, Client: client, Eviction: o.evictionCheck, NotObtained: ErrNotObtained,
			Probe: preflight.Probe{Script: countScript, Keys: []string{key}, Args: []any{preflight.ProbeToken}},
		},
	}
}

// Key returns the Redis key of the lock.
func (m *Mutex) Key() string { return m.key }

// Lock takes the lock for the Owner in ctx, or takes it once more if that
// Owner holds it already; each Lock must be matched by one Unlock. Every
// Lock sets the key's TTL to the one from [WithTTL], so a re-entry renews
// the lease. Lock waits while another Owner holds the lock, until ctx ends
// or the tries set by [WithTries] are used up; then it returns
// [ErrNotObtained] (joined with ctx.Err() if ctx ended). Without an Owner
// in ctx it returns an error wrapping [ErrInvalid].
//
// If the lock expired while the Owner held it, the next Lock starts a new
// hold with count 1: the Owner's outer Unlock then returns [ErrNotHeld].
// Keep the TTL longer than the hold, or renew it with package watchdog.
//
// Each attempt has an id of its own, and its script leaves a receipt, so
// an attempt whose reply is lost and that go-redis sends again counts
// once. A transport error is returned at once, wrapped, after the attempt
// is cancelled by its id (cancel.lua): undone if it ran, stopped if it is
// still on the wire, so a failed Lock leaves no count behind (only if
// Redis is unreachable for that too may the count stay, until the TTL).
//
// Lock returns nil only with at least half the TTL left of the lease it
// sets, counted from just before its call was sent: a call whose answer
// comes back later is undone at once (cancel.lua) and Lock tries again, so
// the key is never gone, nor about to go, when Lock returns. A link whose
// round trip takes half the TTL never gets the lock; TryLock then returns
// false with an error wrapping [ErrNotObtained] that says so.
func (m *Mutex) Lock(ctx context.Context) error {
	owner, err := m.owner(ctx, "lock")
	if err != nil {
		return err
	}
	start := time.Now()
	n := 0 // the owner's count
	if err = m.gate.Pass(ctx); err == nil {
		var late frame.Shorts // tries that took the lock too late, and undid it
		err = retry.Do(ctx, m.o.retry, ErrNotObtained, func(ctx context.Context, _ int) (bool, error) {
			var err error
			n, err = m.try(ctx, owner)
			return late.Keep(n > 0, err)
		})
		err = late.Join(err, ErrNotObtained)
	}
	m.f.Attempted(start, n == 1, err)
	return err
}

// script runs s for owner as the call id, with its receipt.
func (m *Mutex) script(ctx context.Context, s *redis.Script, owner Owner, id string) (int, error) {
	keys := []string{m.key, keyslot.Receipt(m.base, id)}
	ttl := m.o.ttl.Milliseconds()
	// A receipt lives as long as the lock could, at least: a call sent
	// again within that time must still find it.
	return s.Run(ctx, m.client, keys, string(owner), ttl, id, max(ttl, retry.ReceiptTTL.Milliseconds())).Int()
}

// undo runs cancel.lua for the acquire call id of owner, detached from
// ctx's cancellation (its caller gave up) and bounded by
// retry.ReleaseTimeout. It is sent as EVAL, with the script's source, not
// EVALSHA: an undo is rare, so the server may never have cached cancel.lua
// (since its last restart, or at all), and an EVALSHA held up in the
// network then lands on NOSCRIPT, with nobody left waiting to send EVAL;
// the late acquire it was to stop took the lock for a TTL, for nobody.
func (m *Mutex) undo(ctx context.Context, owner Owner, id string) (int, error) {
	ctx, cancel := retry.Detach(ctx)
	defer cancel()
	keys := []string{m.key, keyslot.Receipt(m.base, id)}
	ttl := m.o.ttl.Milliseconds()
	return cancelScript.Eval(ctx, m.client, keys, string(owner), ttl, id, max(ttl, retry.ReceiptTTL.Milliseconds())).Int()
}

// TryLock tries once to take or re-enter the lock for the Owner in ctx.
// It reports (false, nil) when another Owner holds it.
func (m *Mutex) TryLock(ctx context.Context) (bool, error) {
	owner, err := m.owner(ctx, "trylock")
	if err != nil {
		return false, err
	}
	start := time.Now()
	n := 0
	if err = m.gate.Pass(ctx); err == nil {
		n, err = m.try(ctx, owner)
	}
	m.f.Attempted(start, n == 1, err)
	return n > 0, err
}

// try runs the acquire script once and returns the owner's count: 0 when
// another owner holds the lock.
func (m *Mutex) try(ctx context.Context, owner Owner) (int, error) {
	if err := retry.CtxErr(ctx); err != nil {
		return 0, errors.Join(ErrNotObtained, err)
	}
	m.f.At(ctx, HookBeforeAcquire)
	sent := time.Now()
	id := token.New()
	n, err := m.script(ctx, acquireScript, owner, id)
	if err != nil {
		// No reply: the acquire may have run, or may still be on its way.
		// Undo it (cancel.lua also stops a late one), so a failed Lock
		// leaves no count behind.
		_, cerr := m.undo(ctx, owner, id)
		err = retry.Failed(ctx, ErrNotObtained, fmt.Errorf("reentrant: acquire %q: %w", m.key, err))
		if cerr != nil { // the acquire may have run: its count may stay until the TTL
			err = errors.Join(err, fmt.Errorf("reentrant: undo %q: %w", m.key, cerr))
		}
		return 0, err
	}
	if n == 0 {
		return 0, nil // another owner holds it
	}
	if frame.Late(sent, m.o.ttl) {
		// The answer came with less than half the lease left: undo this
		// call (cancel.lua, by its id) rather than return a lease that is
		// over, or nearly (see Lock).
		_, cerr := m.undo(ctx, owner, id)
		err := m.f.TooLate(ErrNotObtained, "acquire", sent, m.o.ttl, "the call was undone")
		if cerr != nil {
			return 0, errors.Join(err, fmt.Errorf("reentrant: undo %q: %w", m.key, cerr))
		}
		return 0, frame.Short{Err: err}
	}
	if n == 1 && m.f.Obs != nil {
		m.mu.Lock()
		m.outer = outerHold{owner: owner, since: sent}
		m.mu.Unlock()
	}
	m.f.At(ctx, HookAcquired)
	return n, nil
}

// Unlock undoes one Lock by the Owner in ctx: it decrements the Owner's
// count, lengthens the TTL to the Mutex's while the count stays above 0
// (never shortens it), and deletes the key when it reaches 0. If that
// Owner does not hold the lock (never locked, unlocked as often as locked,
// expired, or another Owner's lock), Unlock returns [ErrNotHeld] and
// changes nothing: neither the count nor the TTL. An Unlock whose reply is
// lost and that go-redis sends again counts once (see release.lua).
//
// Unlock runs even if ctx is already cancelled: it keeps ctx's values (the
// Owner) but not its cancellation, bounded by its own 2s timeout.
func (m *Mutex) Unlock(ctx context.Context) error {
	owner, err := m.owner(ctx, "unlock")
	if err != nil {
		return err
	}
	ctx, cancel := retry.Detach(ctx)
	defer cancel()
	m.f.At(ctx, HookBeforeRelease)
	n, err := m.script(ctx, releaseScript, owner, token.New())
	if err != nil {
		return fmt.Errorf("reentrant: release %q: %w", m.key, err)
	}
	if n < 0 {
		err := fmt.Errorf("reentrant: unlock %q: %w", m.key, ErrNotHeld)
		m.lost(owner, err)
		return err
	}
	if n == 0 && m.f.Obs != nil {
		held, _ := m.ended(owner)
		m.f.Report(observe.Released, held, nil)
	}
	m.f.At(ctx, HookReleased)
	return nil
}

// Extend sets the key to expire ttl from now if the Owner in ctx holds the
// lock, whatever its count, and returns [ErrNotHeld] (changing nothing)
// otherwise. It makes a Mutex a watchdog.Extender. If ttl < 1ms, it
// returns an error wrapping [ErrInvalid].
func (m *Mutex) Extend(ctx context.Context, ttl time.Duration) error {
	owner, err := m.owner(ctx, "extend")
	if err != nil {
		return err
	}
	if ttl < minTTL {
		return invalid("Extend(ctx, %v): ttl must be at least %v", ttl, minTTL)
	}
	n, err := extendScript.Run(ctx, m.client, []string{m.key}, string(owner), ttl.Milliseconds()).Int()
	if err != nil {
		return fmt.Errorf("reentrant: extend %q: %w", m.key, err)
	}
	if n == 0 {
		err := fmt.Errorf("reentrant: extend %q: %w", m.key, ErrNotHeld)
		m.lost(owner, err)
		return err
	}
	return nil
}

// Count returns how many times the Owner in ctx holds the lock: 0 when it
// does not hold it.
func (m *Mutex) Count(ctx context.Context) (int, error) {
	owner, err := m.owner(ctx, "count")
	if err != nil {
		return 0, err
	}
	n, err := countScript.Run(ctx, m.client, []string{m.key}, string(owner)).Int()
	if err != nil {
		return 0, fmt.Errorf("reentrant: count %q: %w", m.key, err)
	}
	return n, nil
}

// owner returns the error of [Mutex.check], or the Owner in ctx.
func (m *Mutex) owner(ctx context.Context, method string) (Owner, error) {
	if err := m.check(); err != nil {
		return "", err
	}
	return ownerOf(ctx, method, m.key)
}

// check returns the error every method returns before it sends anything:
// the invalid arguments New found, or that New did not make m.
func (m *Mutex) check() error {
	if m == nil {
		return invalid(frame.NotMade)
	}
	return m.f.Check(ErrInvalid)
}

// ended forgets the outermost hold of owner and returns how long it lasted.
// It reports false, and a zero duration, if this Mutex did not see that
// hold begin (or already reported its end).
func (m *Mutex) ended(owner Owner) (time.Duration, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.outer.owner != owner {
		return 0, false
	}
	held := time.Since(m.outer.since)
	m.outer = outerHold{}
	return held, true
}

// lost tells the observer that Unlock or Extend found owner's lock gone,
// if this Mutex saw the hold begin: otherwise the refusal may just be an
// Unlock without a Lock.
func (m *Mutex) lost(owner Owner, err error) {
	if m.f.Obs == nil {
		return
	}
	if held, ok := m.ended(owner); ok {
		m.f.Report(observe.Lost, held, err)
	}
}
