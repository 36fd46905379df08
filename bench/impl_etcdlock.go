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
//
// Under the fault scoreboard (e.users set) the clients dial the addresses
// they are given (the cluster's members, or proxies in front of them) and
// etcdlock runs on its default options, a lease of its own per hold (TTL
// the schedule's), as a user who reads its doc would run it; its Done is
// the scoreboard's loss signal. etcd-mutex is not in the scoreboard's
// default set (name it in -impls).
func init() {
	register(&impl{name: "etcdlock", nodes: 1, scenarios: otherScenarios, connect: connectEtcd(false), gaveUp: gaveUpOn(etcdlock.ErrNotObtained), claims: etcdlockClaims})
	register(&impl{name: "etcd-mutex", nodes: 1, kind: kindPeer, scenarios: otherScenarios, noFaults: etcdMutexNoFaults, connect: connectEtcd(true), gaveUp: func(error) bool { return false }})
	faultSystems["etcdlock"] = sysEtcd
	faultSystems["etcd-mutex"] = sysEtcd
}

// etcdMutexNoFaults is why etcd-mutex is left out of the default fault
// scoreboard.
const etcdMutexNoFaults = "the scoreboard judges etcdlock on etcd; etcd's own Mutex is the speed bench's peer (name it in -impls to run it under faults)"

// etcdLocker is etcdlock's Mutex with its Done as the scoreboard's loss
// signal.
type etcdLocker struct{ *etcdlock.Mutex }

func (l etcdLocker) lost() <-chan struct{} { return l.Done() }

func connectEtcd(peer bool) func(e env) (contender, error) {
	return func(e env) (contender, error) {
		eps, err := systemAddrs(e, others.etcdEndpoints)
		if err != nil {
			return contender{}, err
		}
		c, err := sysclient.Etcd(eps...)
		if err != nil {
			return contender{}, err
		}
		if e.users != nil && !peer {
			return contender{
				locker: func(key string) locker { return etcdLocker{etcdlock.New(c, key, etcdlock.WithTTL(e.ttl))} },
				close:  c.Close,
			}, nil
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

// etcdlockClaims: the resource is written through the fenced store with
// etcdlock's token, so a lease lost while the holder is away (pause,
// latency) is a promise the token keeps.
var etcdlockClaims = claims{
	"pause":      survives(`a paused holder: Done is a hint to stop work, the fencing token is the guarantee`),
	"lost-reply": survives(`a lost reply: the retry finds the claim already there and reads it`),
	"late":       survives(`a command delivered late: a caller that gives up leaves no claim others queue behind`),
	"latency":    survives(`a write delayed past the lease: the fencing token is the guarantee`),
	"kill":       survives(`a killed holder: its lease expires and the next claim's watch fires`),
	"crash":      survives(`the loss of a minority of etcd's members`),
	"expiry":     survives(`a session expiring mid-Lock: Lock never returns a hold whose Done has already closed`),
}
