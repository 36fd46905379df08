package registry

import (
	"strings"

	"github.com/locklab/locklab/zklock"
)

// zklock: package zklock (ZooKeeper's recipe) on a 3-server ensemble, one
// session per contending client (session timeout the common TTL), the lock
// for key k at /locklab/bench/<k>.
//
// Under the fault scoreboard (e.users set) the clients dial the addresses
// they are given (the ensemble's servers, or proxies in front of them);
// the Mutex's Done is the scoreboard's loss signal.
func init() {
	register(&Lock{Name: "zklock", Nodes: 1, System: SysZooKeeper, LossSignal: true, Scenarios: OtherScenarios, Connect: connectZK, GaveUp: gaveUpOn(zklock.ErrNotObtained), Claims: zklockClaims})
}

// ZKPath is the lock's path for key k.
func ZKPath(key string) string { return "/locklab/bench/" + strings.ReplaceAll(key, "/", "_") }

// zkLocker is zklock's Mutex with its Done as the scoreboard's loss
// signal.
type zkLocker struct{ *zklock.Mutex }

func (l zkLocker) lost() <-chan struct{} { return l.Done() }

func connectZK(e Env) (Contender, error) {
	servers, err := e.systemAddrs(Servers.ZooKeeperServers)
	if err != nil {
		return Contender{}, err
	}
	s, err := zklock.Connect(servers, e.TTL)
	if err != nil {
		return Contender{}, err
	}
	return Contender{
		Locker: func(key string) Locker {
			m := zklock.New(s, ZKPath(key))
			if e.Users != nil {
				return zkLocker{m}
			}
			return m
		},
		Close: func() error { s.Close(); return nil },
	}, nil
}

// zklockClaims: ephemeral sequential children; the resource checks the
// token, so a holder that learns of its loss late is refused.
var zklockClaims = Claims{
	"pause":      survives(`a paused holder learns of its loss only when it runs again: the resource checks the token`),
	"lost-reply": survives(`a lost reply: the Mutex finds its child by the token in its name`),
	"late":       survives(`a command delivered late: a Lock that gave up leaves no claim others queue behind`),
	"latency":    survives(`a write delayed past the session: the resource checks the token`),
	"kill":       survives(`a killed holder: its child ends with its session`),
	"crash":      survives(`the loss of a minority of the ensemble`),
	"expiry":     survives(`a session expiring mid-Lock: a Lock returns only on a live session`),
}
