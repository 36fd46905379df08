package main

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/locklab/locklab/redlock"
)

// redlock-5: Redlock over 5 independent servers (quorum 3), with its
// defaults and the common TTL.
func init() {
	register(&impl{name: "redlock-5", nodes: 5, connect: connectRedlock, gaveUp: func(err error) bool {
		return errors.Is(err, redlock.ErrNotObtained) && !errors.Is(err, redlock.ErrQuorumUnreachable)
	}})
}

func connectRedlock(e env) (contender, error) {
	if len(e.addrs) < 5 {
		return contender{}, fmt.Errorf("redlock-5 needs 5 servers, have %d", len(e.addrs))
	}
	sent := new(atomic.Int64)
	cs := e.clients(5, sent)
	clients := make([]redlock.Client, len(cs))
	for i, c := range cs {
		clients[i] = c
	}
	return contender{
		locker: func(key string) locker { return redlock.New(clients, key, redlock.WithTTL(e.ttl)) },
		close:  func() error { return closeAll(cs) },
		sent:   sent,
	}, nil
}
