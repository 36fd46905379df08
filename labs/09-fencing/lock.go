package lab09

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/fencing"
	"github.com/locklab/locklab/redlock"
)

// Mutex is package fencing's Mutex as the lab harness sees it: [Mutex.Fence]
// puts its token on the timeline ("acquired tok=33").
type Mutex struct {
	*fencing.Mutex
}

// NewMutex wraps m.
func NewMutex(m *fencing.Mutex) *Mutex { return &Mutex{Mutex: m} }

// Fence returns the fencing token of the current hold, or 0 when the Mutex
// does not hold the lock.
func (m *Mutex) Fence() uint64 { return uint64(m.Mutex.Token()) }

// Counter is what [Redlock] needs from the Redis server that hands out its
// tokens. *redis.Client satisfies it.
type Counter interface {
	Incr(ctx context.Context, key string) *redis.IntCmd
}

// Redlock is a Redlock (package redlock) with a fencing token. Redlock
// itself has none: its five nodes are independent and agree on nothing but
// who holds the key, and a counter on each of them would drift apart. So the
// token comes from beside the lock: once the Redlock is held, Lock INCRs a
// counter on one Redis server, the token server (in the lab, node 0 of the
// five).
//
// The token is good only if it was issued while the lock was held: a
// holder that paused between the Redlock and the INCR, past its validity,
// would otherwise come back with a token newer than its successor's. So
// Lock keeps the lock only if its validity ([Redlock.Until]) had not ended
// when the INCR's reply came in; otherwise it gives the lock back and fails.
// Then, as long as Redlock's own timing assumptions hold (see package
// redlock), any later holder's INCR comes after ours and its token is
// larger.
//
// That order rests on the token server: one Redis server, which fails alone
// and forgets with a restart or a failover (part 3 of the lab). The lock is
// now also only as available as that server.
//
// Make one with [NewRedlock]. Its methods are safe for concurrent use.
type Redlock struct {
	lock    RedlockMutex
	tokens  Counter
	counter string // the counter's key on the token server

	mu    sync.Mutex    // protects token
	token fencing.Token // the current hold's token; 0 when not held
}

// RedlockMutex is what [Redlock] uses of package redlock's *Mutex, which
// satisfies it.
type RedlockMutex interface {
	Lock(ctx context.Context) error
	TryLock(ctx context.Context) (bool, error)
	Unlock(ctx context.Context) error
	Until() time.Time
	Token() string
}

// NewRedlock returns lock with fencing tokens from the counter key counter
// on the token server behind tokens.
func NewRedlock(lock RedlockMutex, tokens Counter, counter string) *Redlock {
	return &Redlock{lock: lock, tokens: tokens, counter: counter}
}

// Lock acquires the Redlock, then its token (see [Redlock]).
func (m *Redlock) Lock(ctx context.Context) error {
	if err := m.lock.Lock(ctx); err != nil {
		return err
	}
	return m.fence(ctx)
}

// TryLock makes one attempt at the Redlock and, if it got it, takes its
// token. A failure to get the token gives the lock back and is returned.
func (m *Redlock) TryLock(ctx context.Context) (bool, error) {
	ok, err := m.lock.TryLock(ctx)
	if !ok || err != nil {
		return ok, err
	}
	if err := m.fence(ctx); err != nil {
		return false, err
	}
	return true, nil
}

// fence INCRs the token counter for the lock just acquired. If that fails,
// or the lock's validity was over by the time the token came back, it
// releases the lock and returns an error (wrapping redlock.ErrNotObtained
// for a late token).
func (m *Redlock) fence(ctx context.Context) error {
	n, err := m.tokens.Incr(ctx, m.counter).Result()
	if err == nil && !time.Now().Before(m.lock.Until()) {
		err = fmt.Errorf("%w: token %d came after the lock's validity ended", redlock.ErrNotObtained, n)
	}
	if err == nil && n < 1 {
		err = fmt.Errorf("token counter %q is at %d", m.counter, n)
	}
	if err != nil {
		uerr := m.lock.Unlock(context.WithoutCancel(ctx))
		if errors.Is(uerr, redlock.ErrNotHeld) {
			uerr = nil // expired already: nothing to give back
		}
		return errors.Join(fmt.Errorf("lab09: fencing token %q: %w", m.counter, err), uerr)
	}
	m.mu.Lock()
	m.token = fencing.Token(n)
	m.mu.Unlock()
	return nil
}

// Unlock releases the Redlock; the token is forgotten either way.
func (m *Redlock) Unlock(ctx context.Context) error {
	m.mu.Lock()
	m.token = 0
	m.mu.Unlock()
	return m.lock.Unlock(ctx)
}

// Fence returns the fencing token of the current hold, or 0.
func (m *Redlock) Fence() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return uint64(m.token)
}

// Token returns the Redlock's random owner value on the nodes, or "".
func (m *Redlock) Token() string { return m.lock.Token() }

// Until returns when the Redlock's validity ends (see redlock.Mutex.Until).
func (m *Redlock) Until() time.Time { return m.lock.Until() }
