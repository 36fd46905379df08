package registry

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locklab/locklab/redlock"
)

// redlock-5: Redlock over 5 independent servers (quorum 3) with the common
// TTL, in the configuration its package doc recommends for contended locks:
// one Notifier per client over its 5 connections, so waiters queue on every
// node and each node hands off to the same, oldest waiter.
//
// redlock-5-poll: the same lock waiting by polling with its defaults
// (redsync-like), to compare the two strategies side by side.
func init() {
	gaveUp := func(err error) bool {
		return errors.Is(err, redlock.ErrNotObtained) && !errors.Is(err, redlock.ErrQuorumUnreachable)
	}
	register(&Lock{Name: "redlock-5", Order: 70, Nodes: 5, Connect: connectRedlock(true), GaveUp: gaveUp, Claims: redlockClaims})
	register(&Lock{Name: "redlock-5-poll", Order: 80, Nodes: 5, Connect: connectRedlock(false), GaveUp: gaveUp, Claims: redlockClaims})
}

// settleTimeout bounds how long closing a redlock contender waits for the
// commands still in flight.
const settleTimeout = 5 * time.Second

func connectRedlock(notify bool) func(e Env) (Contender, error) {
	return func(e Env) (Contender, error) {
		sent := new(atomic.Int64)
		cs, err := e.Clients("redlock-5", 5, sent)
		if err != nil {
			return Contender{}, err
		}
		clients := make([]redlock.Client, len(cs))
		subs := make([]redlock.NotifyClient, len(cs))
		for i, c := range cs {
			clients[i], subs[i] = e.Redis(i, c), e.Redis(i, c)
		}
		opts := []redlock.Option{redlock.WithTTL(e.TTL)}
		// Lock and Unlock return at a majority; before the clients close,
		// the commands still in flight to slower nodes must end, or a
		// release cut off would leave its key behind.
		var mu sync.Mutex
		var made []*redlock.Mutex
		settle := func() error {
			ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
			defer cancel()
			mu.Lock()
			defer mu.Unlock()
			var errs []error
			for _, m := range made {
				errs = append(errs, m.Settle(ctx))
			}
			return errors.Join(errs...)
		}
		closeFn := func() error { return errors.Join(settle(), closeAll(cs)) }
		if notify {
			n, err := redlock.NewNotifier(context.Background(), subs)
			if err != nil {
				_ = closeAll(cs)
				return Contender{}, err
			}
			opts = append(opts, redlock.WithNotifier(n))
			closeFn = func() error { return errors.Join(settle(), n.Close(), closeAll(cs)) }
		}
		return Contender{
			Locker: func(key string) Locker {
				m := redlock.New(clients, key, opts...)
				mu.Lock()
				made = append(made, m)
				mu.Unlock()
				return m
			},
			Close: closeFn,
			Sent:  sent,
		}, nil
	}
}

// redlockClaims: a quorum of five independent nodes, validity with drift.
var redlockClaims = Claims{
	"pause":      names(`a holder paused past its validity`),
	"lost-reply": survives(`a lost reply sent again`),
	"late":       survives(`a command delivered late`),
	"failover":   survives(`the failover or loss of a minority of nodes`),
	"restart":    names(`nodes restarted without data, or clock jumps, on enough nodes to make a majority without the holder`),
	"latency":    names(`a write delayed in the network past the validity`),
	"eviction":   survives(`eviction: Lock refuses nodes that evict`),
	"clock":      survives(`a clock jump on one node`),
	"kill":       survives(`a killed holder: its keys expire after the TTL`),
	"batch-lost": survives(`a batch of a node's AutoPipeliner sent twice: the node's take refuses a released token, and its release and extend answer from their receipt`),
}
