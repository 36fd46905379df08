package main

import (
	"errors"
	"time"

	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/locklab/locklab/etcdlock"
	"github.com/locklab/locklab/internal/sysclient"
)

// etcdlock: package etcdlock on a 3-member etcd cluster, one client and one
// session (one lease, TTL the common TTL) per contending client, as a
// process would have: a claim per Lock, watch-based FIFO waiting.
//
// etcd-mutex: the peer, etcd's own concurrency.Mutex, on the same kind of
// session: the recipe the chapter quotes as the middle ground.
func init() {
	register(&impl{name: "etcdlock", nodes: 1, scenarios: otherScenarios, noFaults: otherNoFaults, connect: connectEtcd(false), gaveUp: gaveUpOn(etcdlock.ErrNotObtained)})
	register(&impl{name: "etcd-mutex", nodes: 1, kind: kindPeer, scenarios: otherScenarios, noFaults: otherNoFaults, connect: connectEtcd(true), gaveUp: func(error) bool { return false }})
}

func connectEtcd(peer bool) func(e env) (contender, error) {
	return func(e env) (contender, error) {
		eps, err := others.etcdEndpoints()
		if err != nil {
			return contender{}, err
		}
		c, err := sysclient.Etcd(eps...)
		if err != nil {
			return contender{}, err
		}
		s, err := concurrency.NewSession(c, concurrency.WithTTL(int(max(e.ttl/time.Second, 1))))
		if err != nil {
			_ = c.Close()
			return contender{}, err
		}
		return contender{
			locker: func(key string) locker {
				if peer {
					return concurrency.NewMutex(s, key)
				}
				return etcdlock.New(c, key, etcdlock.WithSession(s))
			},
			close: func() error { return errors.Join(s.Close(), c.Close()) },
		}, nil
	}
}
