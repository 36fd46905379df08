package registry

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/reentrant"
)

// reentrant: counted reentrancy in a Redis hash, with its defaults and the
// common TTL. Each contending client is one Owner, carried in the context
// of every call; the bench never re-enters, so each hold has count 1.
func init() {
	register(&Lock{Name: "reentrant", Order: 50, Nodes: 1, Connect: connectReentrant, GaveUp: gaveUpOn(reentrant.ErrNotObtained), Claims: reentrantClaims})
}

func connectReentrant(e Env) (Contender, error) {
	owner := reentrant.NewOwner()
	return e.OneServer(func(c redis.UniversalClient, key string) Locker {
		return &reentrantLocker{m: reentrant.New(c, key, reentrant.WithTTL(e.TTL)), owner: owner}
	}), nil
}

type reentrantLocker struct {
	m     *reentrant.Mutex
	owner reentrant.Owner
}

func (l *reentrantLocker) Lock(ctx context.Context) error {
	return l.m.Lock(reentrant.WithOwner(ctx, l.owner))
}

func (l *reentrantLocker) Unlock(ctx context.Context) error {
	return l.m.Unlock(reentrant.WithOwner(ctx, l.owner))
}

// reentrantClaims: counted reentrancy in a hash with a lease, as any lease
// lock.
var reentrantClaims = Claims{
	"pause":      names(`a holder paused past its TTL, as no lease lock does`),
	"lost-reply": survives(`a lost reply sent again: each call carries an id`),
	"late":       survives(`a command delivered late: a Lock that gave up cancels its call by id`),
	"failover":   names(`a failover before the key replicates`),
	"restart":    names(`a restart without data`),
	"latency":    names(`a write delayed in the network past the TTL`),
	"eviction":   survives(`eviction: Lock refuses a server that evicts`),
	"clock":      names(`a clock jump on the server`),
	"kill":       survives(`a killed holder: a hold lasts at most the TTL after its owner's last call`),
	"batch-lost": survives(`a batch of the AutoPipeliner sent twice: each acquire and release leaves a receipt with its answer, and its second run answers from it, counting nothing twice`),
}
