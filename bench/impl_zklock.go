package main

import (
	"strings"

	"github.com/locklab/locklab/zklock"
)

// zklock: package zklock (ZooKeeper's recipe) on a 3-server ensemble, one
// session per contending client (session timeout the common TTL), the lock
// for key k at /locklab/bench/<k>.
func init() {
	register(&impl{name: "zklock", nodes: 1, scenarios: otherScenarios, noFaults: otherNoFaults, connect: connectZK, gaveUp: gaveUpOn(zklock.ErrNotObtained)})
}

func connectZK(e env) (contender, error) {
	servers, err := others.zkServers()
	if err != nil {
		return contender{}, err
	}
	s, err := zklock.Connect(servers, e.ttl)
	if err != nil {
		return contender{}, err
	}
	return contender{
		locker: func(key string) locker {
			return zklock.New(s, "/locklab/bench/"+strings.ReplaceAll(key, "/", "_"))
		},
		close: func() error { s.Close(); return nil },
	}, nil
}
