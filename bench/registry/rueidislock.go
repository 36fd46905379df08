package registry

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
)

// rueidislock with KeyMajority 1 (one key per lock, as its README advises
// for a single Redis) and NoLoopTracking (Redis >= 7.0.5), the common TTL
// as KeyValidity (extended every KeyValidity/2, its default) and its other
// defaults. Waiters sleep until a client-side-caching invalidation arrives;
// WithContext never gives up while its context lives.
func init() {
	register(&Lock{Name: "rueidislock", Order: 120, LossSignal: true, Nodes: 1, Kind: Peer, Connect: connectRueidislock, GaveUp: func(error) bool { return false },
		NoPipeliner: rueidislockNoPipeliner, NoCluster: rueidislockNoCluster})
}

// rueidislockNoCluster: what the bench saw on a rig Redis Cluster, not yet
// explained (rueidis's client-side-caching invalidations, by which its
// waiters wake, are the suspect).
const rueidislockNoCluster = "on a Redis Cluster its Lock was seen to wait out the bench's 10 s warm-up on a free key (keys cell, 4 clients, 2 of 5 runs on a 3-primary rig cluster), which ends the whole run; not yet diagnosed"

// rueidislockNoPipeliner: rueidislock.NewLocker takes rueidis.ClientOption
// and makes its own rueidis client, never a go-redis one. That client
// pipelines by design (concurrent commands share a connection); when the
// connection is lost, every command in flight on it fails with the error,
// and rueidis sends again only the commands it marks retryable (read-only
// ones: client.go, cmd.IsRetryable), not rueidislock's acquire and release
// scripts (EVALSHA): its writes are not run twice.
const rueidislockNoPipeliner = "its API takes no go-redis AutoPipeliner: NewLocker takes rueidis.ClientOption and makes its own rueidis client, which pipelines by design but on a lost connection fails the commands in flight and resends only read-only ones, not rueidislock's scripts"

func connectRueidislock(e Env) (Contender, error) {
	opt := rueidis.ClientOption{
		InitAddress:  []string{e.Addrs[0]},
		DisableRetry: true,
		Dialer:       net.Dialer{Timeout: 2 * time.Second},
	}
	e.Deployment.rueidis(&opt) // a cluster's seeds, or the sentinels
	if e.Users != nil {
		opt = e.Users.Rueidis(e.Addrs[0])
	}
	lk, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption:   opt,
		KeyPrefix:      rueidisPrefix,
		KeyValidity:    e.TTL,
		KeyMajority:    1,
		NoLoopTracking: true,
	})
	if err != nil {
		return Contender{}, err
	}
	return Contender{
		Locker: func(key string) Locker { return &rueidisLocker{lk: lk, key: key} },
		Close:  func() error { lk.Close(); return nil },
	}, nil
}

// rueidisPrefix prefixes rueidislock's keys ("<prefix>:0:<name>"), so the
// bench's leftover-key scan finds them.
const rueidisPrefix = KeyRoot + "rueidislock"

type rueidisLocker struct {
	lk     rueidislock.Locker
	key    string
	held   context.Context    // the lock's context: cancelled when the lock is lost or released
	cancel context.CancelFunc // releases the lock
	done   context.CancelFunc // ends the hold context (see holdPast)
}

// Lock waits in WithContext. The lock's context derives from the one
// given, so holdPast keeps the run's end from releasing it mid-hold.
func (l *rueidisLocker) Lock(ctx context.Context) error {
	var cancel context.CancelFunc
	var held context.Context
	done, err := holdPast(ctx, func(hold context.Context) error {
		var err error
		held, cancel, err = l.lk.WithContext(hold, l.key)
		return err
	}, func() { cancel() })
	if err != nil {
		return err
	}
	l.cancel, l.done, l.held = cancel, done, held
	return nil
}

// lost is closed when rueidislock cancels the lock's context: the lock
// was lost, or released.
func (l *rueidisLocker) lost() <-chan struct{} {
	if l.held == nil {
		return nil
	}
	return l.held.Done()
}

// Unlock cancels the lock's context; rueidislock then deletes its key, and
// the cancel function returns once it has.
func (l *rueidisLocker) Unlock(context.Context) error {
	if l.cancel == nil {
		return errors.New("rueidislock: not held")
	}
	l.cancel()
	l.done()
	l.cancel, l.done = nil, nil
	return nil
}
