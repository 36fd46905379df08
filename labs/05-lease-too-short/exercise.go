// Package lab05 holds the exercise of lab 05 (the lease too short): the
// order service's lock, kept alive by the watchdog from a popular
// tutorial.
package lab05

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/token"
	"github.com/locklab/locklab/labs"
)

// ErrNotHeld is returned by Unlock when this lock does not hold the key:
// it never took it, already released it, or its lease ran out.
var ErrNotHeld = errors.New("lab05: lock not held")

// Client is the part of a go-redis client the exercise uses: scripts, SET
// and PEXPIRE. *redis.Client satisfies it.
type Client interface {
	redis.Scripter
	SetArgs(ctx context.Context, key string, value any, a redis.SetArgs) *redis.StatusCmd
	PExpire(ctx context.Context, key string, expiration time.Duration) *redis.BoolCmd
}

// releaseScript deletes the key only if it still holds our token.
var releaseScript = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("DEL", KEYS[1])
end
return 0`)

// closed is the Done channel of a lock that does not hold anything.
var closed = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// Exercise is the order service's lock: taken correctly with one
// SET NX PX, released with an owner-checked script, and kept alive while
// the job runs by the watchdog from the tutorial (see watchDog). Run
// `make exercise LAB=05`: it fails until a holder whose lease ran out while
// it was frozen learns, from Done, that the lock is no longer its own.
type Exercise struct {
	client Client
	key    string
	ttl    time.Duration

	mu    sync.Mutex    // protects the fields below
	token string        // our value in the key; "" when not held
	stop  chan struct{} // closed by Unlock: the watchdog can go home
	done  chan struct{} // closed when the watchdog has stopped; see Done
}

// NewExercise returns the lock for key on client with a lease of ttl.
func NewExercise(client Client, key string, ttl time.Duration) *Exercise {
	return &Exercise{client: client, key: key, ttl: ttl, done: closed}
}

// Token returns the value this lock wrote into the key, or "" when it does
// not hold the lock.
func (m *Exercise) Token() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.token
}

// Done returns a channel that is closed when the watchdog of the current
// (or last) hold stops watching the lock. The job done under the lock
// checks it before every step and stops when it is closed.
func (m *Exercise) Done() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.done
}

// TryLock takes the lock if the key is free, starts the watchdog, and
// reports whether it took the lock.
func (m *Exercise) TryLock(ctx context.Context) (bool, error) {
	tok := token.New()
	ok, err := labs.TakeKey(ctx, m.client, m.key, tok, m.ttl)
	if err != nil || !ok {
		return false, err
	}
	stop, done := make(chan struct{}), make(chan struct{})
	m.mu.Lock()
	m.token, m.stop, m.done = tok, stop, done
	m.mu.Unlock()
	go m.watchDog(tok, stop, done)
	return true, nil
}

// Lock retries TryLock every 5ms until it succeeds or ctx ends.
func (m *Exercise) Lock(ctx context.Context) error { return labs.PollLock(ctx, m.TryLock) }

// Unlock sends the watchdog home, waits until it has stopped, and deletes
// the key if it still holds our token.
func (m *Exercise) Unlock(ctx context.Context) error {
	m.mu.Lock()
	tok, stop, done := m.token, m.stop, m.done
	m.token, m.stop = "", nil
	m.mu.Unlock()
	if tok == "" {
		return ErrNotHeld
	}
	close(stop)
	<-done
	n, err := releaseScript.Run(ctx, m.client, []string{m.key}, tok).Int()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}

// watchDog is the tutorial's watchdog: every ttl/3 it sets the key's TTL
// back to the full lease, until Unlock closes stop. Done is closed when it
// returns.
func (m *Exercise) watchDog(tok string, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	ticker := time.NewTicker(m.ttl / 3) // renew at a third of the lease, as Redisson does
	defer ticker.Stop()
	for {
		select {
		case <-stop:
			return // the job is done: the watchdog can go home
		case <-ticker.C:
		}
		// The tutorial: "the renewal must also check that the lock is
		// ours, like the unlock does; left out here for brevity."
		//
		// Your code here (Lab 05): renew only while the key still holds
		// tok, in one step on the server. When it does not, the lock is
		// lost: stop watching (return), so that Done tells the holder.
		m.client.PExpire(context.Background(), m.key, m.ttl)
	}
}
