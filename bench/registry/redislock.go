package registry

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/bsm/redislock"
)

// redislockRetry is the retry strategy given to redislock, whose default is
// not to retry at all: a linear 1ms backoff ("redislock-tuned" in
// peer-baseline.md).
const redislockRetry = time.Millisecond

// bsm/redislock with RetryStrategy LinearBackoff(1ms) and the common TTL.
// Obtain retries until its own deadline, one TTL after the call. Since
// v0.10.0 Obtain is ObtainMulti of one key, whose script runs MSETNX then
// PEXPIRE, one command more per acquisition than
// v0.9.4's SET NX PX (and its release checks the token with MGET, not GET).
// redislock.New takes any redis.Scripter, so it runs on a go-redis
// AutoPipeliner too (redislock@autopipe).
func init() {
	register(&Lock{Name: "redislock", Order: 110, Nodes: 1, PipelinedInDefault: true, Kind: Peer, Connect: connectRedislock, GaveUp: redislockGaveUp, Claims: redislockClaims})
}

func connectRedislock(e Env) (Contender, error) {
	sent := new(atomic.Int64)
	c := e.Client(0, sent)
	rl := redislock.New(e.Redis(0, c))
	opt := &redislock.Options{RetryStrategy: redislock.LinearBackoff(redislockRetry)}
	return Contender{
		Locker: func(key string) Locker {
			return &redislockLocker{c: rl, key: key, ttl: e.TTL, opt: opt}
		},
		Close: c.Close,
		Sent:  sent,
	}, nil
}

type redislockLocker struct {
	c    *redislock.Client
	key  string
	ttl  time.Duration
	opt  *redislock.Options
	held *redislock.Lock
}

func (l *redislockLocker) Lock(ctx context.Context) error {
	lk, err := l.c.Obtain(ctx, l.key, l.ttl, l.opt)
	if err != nil {
		return err
	}
	l.held = lk
	return nil
}

func (l *redislockLocker) Unlock(ctx context.Context) error {
	lk := l.held
	l.held = nil
	return lk.Release(ctx)
}

// redislockGaveUp reports ErrNotObtained, and the deadline redislock sets
// itself (ttl from the call) when the caller's context has none: the run's
// context never has a deadline, so DeadlineExceeded is redislock giving up.
// Since v0.10.0 a deadline that ends the wait between tries returns
// ErrNotObtained joined with it (v0.9.4 returned DeadlineExceeded alone);
// one that ends a try in flight still returns the command's error alone.
func redislockGaveUp(err error) bool {
	return errors.Is(err, redislock.ErrNotObtained) || errors.Is(err, context.DeadlineExceeded)
}

func (l *redislockLocker) token() string {
	if l.held == nil {
		return ""
	}
	return l.held.Token()
}

// redislockClaims: what redislock v0.10.0's code does under the schedules
// it has been read against (its scripts in the module cache), not what
// its documentation promises.
var redislockClaims = Claims{
	"batch-lost": survives(`a batch of the AutoPipeliner sent twice: obtain.lua run twice finds the key holding its own token (canOverrideKeys) and sets it again, so the acquire stands; ` +
		`but release.lua, a compare-and-delete, run twice finds the key gone or another holder's and answers nil, and Release returns ErrLockNotHeld though the first run released the lock`).reportsFailed(),
}
