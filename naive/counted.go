package naive

import (
	"context"
	"fmt"

	"github.com/locklab/locklab/internal/token"
)

// Counted is a counted, reentrant lock whose scripts change the count on
// every run: the holder may Lock again without waiting, each Lock is
// matched by one Unlock, and the key is deleted when the count returns to
// zero. Its owner is the Mutex: one random id, made by [NewCounted].
//
// Every step is one owner-checked Lua script, so no other client can
// interleave; what it gets wrong is the network. When a reply is lost
// (a connection reset, a read timeout), go-redis on its default options
// sends the command again, and Redis runs the script a second time:
//
//	A: Lock; Lock                     count 2
//	A: Unlock -> HINCRBY -1           count 1, the reply is lost
//	   go-redis sends it again: HINCRBY -1, count 0, DEL
//	B: Lock -> OK                     while A is still inside
//
// The mistake: a script that is not idempotent, behind a client that
// retries. The fix (package reentrant): every call carries an id of its
// own, and its script leaves a receipt, so a second run of the same call
// answers from the receipt and changes nothing.
//
// TryLock runs the acquire script, which adds one to the count; Unlock runs
// the release script, which takes one back and deletes the key at zero.
//
// Use [NewCounted]; a Counted must not be copied after first use.
type Counted struct {
	lock
	owner string
}

// NewCounted returns the counted lock for key on client, owned by the new
// Mutex.
func NewCounted(client Client, key string, opts ...Option) *Counted {
	m := &Counted{owner: token.New()}
	m.init(client, key, opts, steps{tryLock: m.countUp, unlock: m.countDown})
	return m
}

// Token returns the owner id while the lock is held, or "".
func (m *Counted) Token() string { return m.lock.Token() }

// countUp is TryLock: it takes the lock, or takes it once more.
func (m *Counted) countUp(ctx context.Context) (bool, error) {
	n, err := countedAcquire.Run(ctx, m.client, []string{m.key}, m.owner, m.opts.ttl.Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("naive: acquire %q: %w", m.key, err)
	}
	if n == 0 {
		return false, nil
	}
	m.held(m.owner)
	return true, nil
}

// countDown is Unlock: it takes one count back, and deletes the key at
// zero. Run twice, it takes two.
func (m *Counted) countDown(ctx context.Context) error {
	n, err := countedRelease.Run(ctx, m.client, []string{m.key}, m.owner, m.opts.ttl.Milliseconds()).Int()
	if err != nil {
		return fmt.Errorf("naive: release %q: %w", m.key, err)
	}
	if n < 0 {
		m.take()
		return ErrNotHeld
	}
	if n == 0 {
		m.take()
	}
	return nil
}
