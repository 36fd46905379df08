// Package lab08 holds the learner's exercise for lab 08 (Redlock): a
// Redlock written from the Redis distributed-locks page, with one step of
// the algorithm left out.
package lab08

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/token"
	"github.com/locklab/locklab/labs"
	"github.com/locklab/locklab/redlock"
)

// ErrNotHeld is returned by [Exercise.Unlock] when none of the nodes still
// holds this lock's token.
var ErrNotHeld = errors.New("lab08: lock not held")

// releaseLua deletes KEYS[1] if it holds ARGV[1]; it returns 1 if it did.
const releaseLua = `if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`

// Exercise is a Redlock on N independent Redis nodes, as the team wrote it
// from the distributed-locks page: SET NX PX on every node in parallel, a
// majority wins, the rest is given back. One step of the algorithm is
// missing. Run `make exercise LAB=08`: it fails until a client frozen in
// the middle of Lock no longer walks out of it holding a lock that expired
// while it was frozen.
type Exercise struct {
	clients []*redis.Client // one per independent node
	key     string
	ttl     time.Duration
	hook    func(ctx context.Context, point string) // the lab freezes the client here

	mu    sync.Mutex // protects token
	token string     // our value on the nodes while we hold the lock
}

// NewExercise returns the lock for key on the nodes behind clients, with a
// lease of ttl on each node.
func NewExercise(clients []*redis.Client, key string, ttl time.Duration, hook func(context.Context, string)) *Exercise {
	return &Exercise{clients: clients, key: key, ttl: ttl, hook: hook}
}

// TryLock makes one attempt to take the lock on a majority of the nodes
// and reports whether it did.
func (m *Exercise) TryLock(ctx context.Context) (bool, error) {
	tok := token.New()
	if n := m.setAll(ctx, tok); n < len(m.clients)/2+1 {
		m.releaseAll(ctx, tok) // no majority: give back the nodes we got
		return false, nil
	}
	m.hook(ctx, redlock.HookAcquiredQuorum) // a majority said OK
	// Your code here (Lab 08): the majority said OK. Is the lock still good?
	m.mu.Lock()
	m.token = tok
	m.mu.Unlock()
	return true, nil
}

// Lock calls TryLock until it succeeds or ctx ends, after a random pause
// of 10-50ms between attempts.
func (m *Exercise) Lock(ctx context.Context) error {
	return labs.PollLockPausing(ctx, m.TryLock, func() time.Duration { return 10*time.Millisecond + rand.N(40*time.Millisecond) })
}

// Unlock deletes our token from every node.
func (m *Exercise) Unlock(ctx context.Context) error {
	m.mu.Lock()
	tok := m.token
	m.token = ""
	m.mu.Unlock()
	if tok == "" || m.releaseAll(ctx, tok) == 0 {
		return ErrNotHeld
	}
	return nil
}

// Token returns our value on the nodes while we hold the lock, or "".
func (m *Exercise) Token() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.token
}

// setAll sends SET key tok NX PX ttl to every node at once and returns how
// many said OK. A node that has not answered within nodeTimeout counts as
// a no.
func (m *Exercise) setAll(ctx context.Context, tok string) int {
	ctx, cancel := context.WithTimeout(ctx, m.nodeTimeout())
	defer cancel()
	return m.onAll(func(c *redis.Client) bool {
		return c.SetArgs(ctx, m.key, tok, redis.SetArgs{Mode: "NX", TTL: m.ttl}).Err() == nil
	})
}

// releaseAll deletes tok from every node where the key still holds it,
// even if ctx is cancelled, and returns on how many nodes it did.
func (m *Exercise) releaseAll(ctx context.Context, tok string) int {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.nodeTimeout())
	defer cancel()
	return m.onAll(func(c *redis.Client) bool {
		n, err := c.Eval(ctx, releaseLua, []string{m.key}, tok).Int()
		return err == nil && n == 1
	})
}

// nodeTimeout is how long a round waits for each node: half the TTL, a
// generous bound, so that a busy machine does not make a live node look
// dead.
func (m *Exercise) nodeTimeout() time.Duration { return m.ttl / 2 }

// onAll runs call on every node in parallel and counts the trues.
func (m *Exercise) onAll(call func(*redis.Client) bool) int {
	var wg sync.WaitGroup
	var n atomic.Int32
	for _, c := range m.clients {
		wg.Go(func() {
			if call(c) {
				n.Add(1)
			}
		})
	}
	wg.Wait()
	return int(n.Load())
}
