package reentrant

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/redis/go-redis/v9"
)

// Client is the part of a go-redis client the Mutex uses: scripts.
// *redis.Client, *redis.ClusterClient, *redis.Ring and failover clients
// all satisfy it.
type Client interface {
	redis.Scripter
}

// Hook points, passed to the function given to [WithHook].
const (
	// HookBeforeAcquire fires before each run of the acquire script.
	HookBeforeAcquire = "before-acquire"
	// HookAcquired fires after the acquire script took or re-entered the
	// lock, before Lock returns.
	HookAcquired = "acquired"
	// HookBeforeRelease fires before the release script runs.
	HookBeforeRelease = "before-release"
	// HookReleased fires after the release script decremented the count
	// (and deleted the key if it reached 0).
	HookReleased = "released"
)

// Mutex is a counted, reentrant lock on one Redis key. The owner of each
// call is the [Owner] carried by its context ([WithOwner]). Create it with
// [New]; the zero value is not usable. A Mutex must not be copied after
// first use. It keeps no state of its own besides its configuration, so its
// methods are safe for concurrent use, and any number of Mutex values (in
// any number of processes) for the same key act as one lock.
type Mutex struct {
	client Client
	key    string
	o      options
	err    error // invalid argument, returned by every method
}

// New returns a Mutex for key. New is required: it applies the options
// and checks the arguments. An invalid argument (nil client, empty key, an
// option out of range) is reported by every method as an error wrapping
// [ErrInvalid].
func New(client Client, key string, opts ...Option) *Mutex {
	o, err := newOptions(opts)
	switch {
	case err != nil:
	case client == nil || reflect.ValueOf(client).Kind() == reflect.Pointer && reflect.ValueOf(client).IsNil():
		err = fmt.Errorf("reentrant: New: nil client: %w", ErrInvalid)
	case key == "":
		err = fmt.Errorf("reentrant: New: empty key: %w", ErrInvalid)
	}
	return &Mutex{client: client, key: key, o: o, err: err}
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
// A transport error is returned at once, wrapped. The acquire may still
// have reached Redis, so the count is then unknown; it cannot be undone
// safely (a decrement could drop an outer hold), and the key expires after
// the TTL.
func (m *Mutex) Lock(ctx context.Context) error {
	owner, err := m.owner(ctx, "lock")
	if err != nil {
		return err
	}
	for attempt := 1; ; attempt++ {
		ok, err := m.try(ctx, owner)
		if err != nil || ok {
			return err
		}
		if m.o.tries > 0 && attempt >= m.o.tries {
			return fmt.Errorf("reentrant: lock %q: %d tries: %w", m.key, attempt, ErrNotObtained)
		}
		t := time.NewTimer(m.o.delay(attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(ErrNotObtained, ctx.Err())
		case <-t.C:
		}
	}
}

// TryLock tries once to take or re-enter the lock for the Owner in ctx.
// It reports (false, nil) when another Owner holds it.
func (m *Mutex) TryLock(ctx context.Context) (bool, error) {
	owner, err := m.owner(ctx, "trylock")
	if err != nil {
		return false, err
	}
	return m.try(ctx, owner)
}

func (m *Mutex) try(ctx context.Context, owner Owner) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, errors.Join(ErrNotObtained, err)
	}
	m.callHook(ctx, HookBeforeAcquire)
	n, err := acquireScript.Run(ctx, m.client, []string{m.key}, string(owner), m.o.ttl.Milliseconds()).Int()
	if err != nil {
		if cerr := ctxErr(ctx); cerr != nil {
			return false, errors.Join(ErrNotObtained, cerr)
		}
		return false, fmt.Errorf("reentrant: acquire %q: %w", m.key, err)
	}
	if n == 0 {
		return false, nil // another owner holds it
	}
	m.callHook(ctx, HookAcquired)
	return true, nil
}

// Unlock undoes one Lock by the Owner in ctx: it decrements the Owner's
// count, renews the TTL while the count stays above 0, and deletes the key
// when it reaches 0. If that Owner does not hold the lock (never locked,
// unlocked as often as locked, expired, or another Owner's lock), Unlock
// returns [ErrNotHeld] and changes nothing: neither the count nor the TTL.
//
// Unlock runs even if ctx is already cancelled: it then uses
// context.WithoutCancel(ctx), which keeps the Owner, bounded by 5s.
func (m *Mutex) Unlock(ctx context.Context) error {
	owner, err := m.owner(ctx, "unlock")
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		ctx = context.WithoutCancel(ctx)
	}
	ctx, cancel := context.WithTimeout(ctx, releaseTimeout)
	defer cancel()
	m.callHook(ctx, HookBeforeRelease)
	n, err := releaseScript.Run(ctx, m.client, []string{m.key}, string(owner), m.o.ttl.Milliseconds()).Int()
	if err != nil {
		return fmt.Errorf("reentrant: release %q: %w", m.key, err)
	}
	if n < 0 {
		return fmt.Errorf("reentrant: unlock %q: %w", m.key, ErrNotHeld)
	}
	m.callHook(ctx, HookReleased)
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
		return fmt.Errorf("reentrant: extend %q: ttl %v is below %v: %w", m.key, ttl, minTTL, ErrInvalid)
	}
	n, err := extendScript.Run(ctx, m.client, []string{m.key}, string(owner), ttl.Milliseconds()).Int()
	if err != nil {
		return fmt.Errorf("reentrant: extend %q: %w", m.key, err)
	}
	if n == 0 {
		return fmt.Errorf("reentrant: extend %q: %w", m.key, ErrNotHeld)
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

// ctxErr returns ctx.Err(), or context.DeadlineExceeded once ctx's
// deadline has passed: go-redis turns the deadline into a socket timeout
// that may be reported a moment before ctx.Err() is set.
func ctxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}

// owner returns the configuration error, or the Owner in ctx.
func (m *Mutex) owner(ctx context.Context, method string) (Owner, error) {
	if m.err != nil {
		return "", m.err
	}
	return ownerOf(ctx, method, m.key)
}

func (m *Mutex) callHook(ctx context.Context, point string) {
	if m.o.hook != nil {
		m.o.hook(ctx, point)
	}
}
