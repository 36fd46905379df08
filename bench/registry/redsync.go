package registry

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
)

// redsync with its library defaults (8s expiry, 32 tries, a random
// 50-250ms delay between tries), over 1 pool and over 5 pools (Redlock,
// quorum 3), through its go-redis v9 pool adapter. Only the expiry is set,
// to the bench's common TTL (8s, its own default, unless -ttl). The
// adapter (goredis.NewPool) takes a redis.UniversalClient, which a
// go-redis AutoPipeliner is: redsync runs on one too (redsync-1@autopipe).
func init() {
	register(&Lock{Name: "redsync-1", Order: 90, Nodes: 1, PipelinedInDefault: true, Kind: Peer, Connect: connectRedsync(1), GaveUp: redsyncGaveUp, Claims: redsyncClaims})
	register(&Lock{Name: "redsync-5", Order: 100, Nodes: 5, Kind: Peer, Connect: connectRedsync(5), GaveUp: redsyncGaveUp, Claims: redsyncClaims})
}

func connectRedsync(n int) func(Env) (Contender, error) {
	return func(e Env) (Contender, error) {
		sent := new(atomic.Int64)
		cs, err := e.Clients(fmt.Sprintf("redsync-%d", n), n, sent)
		if err != nil {
			return Contender{}, err
		}
		pools := make([]rsredis.Pool, n)
		for i, c := range cs {
			pools[i] = goredis.NewPool(e.Redis(i, c))
		}
		rs := redsync.New(pools...)
		return Contender{
			Locker: func(key string) Locker {
				return &redsyncLocker{m: rs.NewMutex(key, redsync.WithExpiry(e.TTL))}
			},
			Close: func() error { return closeAll(cs) },
			Sent:  sent,
		}, nil
	}
}

type redsyncLocker struct{ m *redsync.Mutex }

func (l *redsyncLocker) Lock(ctx context.Context) error { return l.m.LockContext(ctx) }

func (l *redsyncLocker) Unlock(ctx context.Context) error {
	ok, err := l.m.UnlockContext(ctx)
	if err == nil && !ok {
		err = errors.New("redsync: unlock reached no quorum")
	}
	return err
}

// redsyncGaveUp reports redsync's "failed" outcomes: ErrFailed after the
// last try, or *ErrTaken / *ErrNodeTaken when the nodes report the key
// taken. An error carrying a RedisError is a transport failure.
func redsyncGaveUp(err error) bool {
	var re *redsync.RedisError
	if errors.As(err, &re) {
		return false
	}
	var taken *redsync.ErrTaken
	var nodeTaken *redsync.ErrNodeTaken
	return errors.Is(err, redsync.ErrFailed) || errors.As(err, &taken) || errors.As(err, &nodeTaken)
}

func (l *redsyncLocker) token() string { return l.m.Value() }

// redsyncClaims: what redsync v4.18.1's code does under the schedules it
// has been read against (mutex.go and scripts.go in the module cache), not
// what its documentation promises.
var redsyncClaims = Claims{
	"batch-lost": survives(`a batch of the AutoPipeliner sent twice: SETNX run twice answers false to the client that set the key, so its Lock attempt misses that node, deletes its own value (deleteScript) and tries again: safe and live, at the cost of a retry; ` +
		`but deleteScript, a compare-and-delete, run twice finds the key gone (-1, ErrLockAlreadyExpired) or the next holder's (0), and Unlock returns an error though the first run released the lock`).reportsFailed(),
}
