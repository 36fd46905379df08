package registry

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
	register(&Lock{Name: "etcdlock", Nodes: 1, System: SysEtcd, LossSignal: true, Scenarios: OtherScenarios, Connect: connectEtcd(false), GaveUp: gaveUpOn(etcdlock.ErrNotObtained), Claims: etcdlockClaims})
	register(&Lock{Name: "etcd-mutex", Nodes: 1, Kind: Peer, System: SysEtcd, Scenarios: OtherScenarios, NoFaults: etcdMutexNoFaults, Connect: connectEtcd(true), GaveUp: func(error) bool { return false }})
}

// etcdMutexNoFaults is why etcd-mutex is left out of the default fault
// scoreboard.
const etcdMutexNoFaults = "the scoreboard judges etcdlock on etcd; etcd's own Mutex is the speed bench's peer (name it in -impls to run it under faults)"

// etcdLocker is etcdlock's Mutex with its Done as the scoreboard's loss
// signal.
type etcdLocker struct{ *etcdlock.Mutex }

func (l etcdLocker) lost() <-chan struct{} { return l.Done() }

func connectEtcd(peer bool) func(e Env) (Contender, error) {
	return func(e Env) (Contender, error) {
		eps, err := e.systemAddrs(Servers.EtcdEndpoints)
		if err != nil {
			return Contender{}, err
		}
		c, err := sysclient.Etcd(eps...)
		if err != nil {
			return Contender{}, err
		}
		if e.Users != nil && !peer {
			return Contender{
				Locker: func(key string) Locker { return etcdLocker{etcdlock.New(c, key, etcdlock.WithTTL(e.TTL))} },
				Close:  c.Close,
			}, nil
		}
		s, err := concurrency.NewSession(c, concurrency.WithTTL(int(max(e.TTL/time.Second, 1))))
		if err != nil {
			_ = c.Close()
			return Contender{}, err
		}
		return Contender{
			Locker: func(key string) Locker {
				if peer {
					return concurrency.NewMutex(s, key)
				}
				return etcdlock.New(c, key, etcdlock.WithSession(s))
			},
			Close: func() error { return errors.Join(s.Close(), c.Close()) },
		}, nil
	}
}

// etcdlockClaims: the resource is written through the fenced store with
// etcdlock's token, so a lease lost while the holder is away (pause,
// latency) is a promise the token keeps.
var etcdlockClaims = Claims{
	"pause":      survives(`a paused holder: Done is a hint to stop work, the fencing token is the guarantee`),
	"lost-reply": survives(`a lost reply: the retry finds the claim already there and reads it`),
	"late":       survives(`a command delivered late: a caller that gives up leaves no claim others queue behind`),
	"latency":    survives(`a write delayed past the lease: the fencing token is the guarantee`),
	"kill":       survives(`a killed holder: its lease expires and the next claim's watch fires`),
	"crash":      survives(`the loss of a minority of etcd's members`),
	"expiry":     survives(`a session expiring mid-Lock: Lock never returns a hold whose Done has already closed`),
}
