package registry

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/locklab/locklab/correct"
	"github.com/locklab/locklab/watchdog"
)

// correct: SET NX PX (in take.lua) with an owner-checked release and the common TTL, in
// the configuration its package doc recommends for contended locks: one
// Notifier per client (a separate process would have one), so waiters
// queue and the holder hands the lock straight to the oldest one.
//
// correct-poll: the same lock waiting by polling with its default jittered
// backoff, to compare the two waiting strategies side by side.
//
// correct+keep: correct with a Notifier, renewed while held by
// watchdog.Keep with its defaults (renewal every TTL/3): a renewed lock
// that also waits without polling, which package watchdog's own Mutex
// does not (it polls).
func init() {
	gaveUp := gaveUpOn(correct.ErrNotObtained)
	register(&Lock{Name: "correct", Order: 10, Nodes: 1, PipelinedInDefault: true, Connect: connectCorrect(true, false), GaveUp: gaveUp, Claims: correctClaims, NoCluster: notifierNoCluster})
	register(&Lock{Name: "correct-poll", Order: 20, Nodes: 1, Connect: connectCorrect(false, false), GaveUp: gaveUp, Claims: correctClaims})
	register(&Lock{Name: "correct+keep", Order: 30, LossSignal: true, Nodes: 1, Connect: connectCorrect(true, true), GaveUp: gaveUp, Claims: keepClaims, NoCluster: notifierNoCluster})
}

// notifierNoCluster: correct.NewNotifier refuses a Redis Cluster (see
// internal/preflight.Clustered).
const notifierNoCluster = "its Notifier refuses a Redis Cluster (the hand-off's PUBLISH counts only the key's node's subscribers, so it can pass a waiter by as gone that still takes the lock); correct-poll is the same lock waiting by polling, which runs there"

func connectCorrect(notify, keep bool) func(e Env) (Contender, error) {
	return func(e Env) (Contender, error) {
		sent := new(atomic.Int64)
		c := e.Client(0, sent)
		lc := e.Redis(0, c)
		opts := []correct.Option{correct.WithTTL(e.TTL)}
		closeAll := c.Close
		if notify {
			n, err := correct.NewNotifier(context.Background(), lc)
			if err != nil {
				_ = c.Close()
				return Contender{}, err
			}
			opts = append(opts, correct.WithNotifier(n))
			closeAll = func() error { return errors.Join(n.Close(), c.Close()) }
		}
		return Contender{
			Locker: func(key string) Locker {
				m := correct.New(lc, key, opts...)
				if keep {
					return &keptLocker{m: m, ttl: e.TTL}
				}
				return m
			},
			Close: closeAll,
			Sent:  sent,
		}, nil
	}
}

// keptLocker is correct's Mutex renewed by watchdog.Keep while held. The
// wait ends with the run; the hold and its renewals go on until Unlock.
type keptLocker struct {
	m     *correct.Mutex
	ttl   time.Duration
	lease *watchdog.Lease
}

var keptNotHeld = watchdog.WithNotHeld(func(err error) bool { return errors.Is(err, correct.ErrNotHeld) })

func (l *keptLocker) Lock(ctx context.Context) error {
	if err := l.m.Lock(ctx); err != nil {
		return err
	}
	lease, err := watchdog.Keep(context.WithoutCancel(ctx), l.m, watchdog.WithTTL(l.ttl), keptNotHeld)
	if err != nil {
		return errors.Join(err, l.m.Unlock(context.WithoutCancel(ctx)))
	}
	l.lease = lease
	return nil
}

func (l *keptLocker) Unlock(ctx context.Context) error {
	var err error
	if l.lease != nil {
		err = l.lease.Stop() // no renewal after the release
		l.lease = nil
	}
	return errors.Join(err, l.m.Unlock(ctx))
}

// lost is closed when the lease ends: lost, or stopped by Unlock.
func (l *keptLocker) lost() <-chan struct{} {
	if l.lease == nil {
		return nil
	}
	return l.lease.Done()
}

func (l *keptLocker) token() string { return l.m.Token() }

// correctClaims: a lease lock on one server. It survives what a token and
// an owner check catch; it names what ends a lease early or forgets it.
var correctClaims = Claims{
	"pause":      names(`a holder paused past its TTL: the key expires while it sleeps (by design)`),
	"lost-reply": survives(`a lost reply sent again: the same token, so the second SET is its own`),
	"late":       survives(`a command delivered late: the release is owner-checked`),
	"failover":   names(`a failover before the key replicates: the new primary forgets the key`),
	"restart":    names(`a restart without data: the server forgets the key`),
	"latency":    names(`a write delayed in the network past the TTL`),
	"eviction":   survives(`eviction: Lock refuses a server that evicts`),
	"clock":      names(`a clock jump on the server: it ends the lock early`),
	"kill":       survives(`a killed holder: its key expires after the TTL`),
	"batch-lost": survives(`a batch of the AutoPipeliner sent twice: every script answers right when run twice (the acquire finds its own token, the release and the hand-off answer from their receipt), so no second run changes the key or says "not held"`),
}

// keepClaims: correct renewed by watchdog.Keep; a paused holder stops
// renewing as well.
var keepClaims = correctClaims.with(Claims{
	"pause": names(`a holder paused past its TTL: the renewal sleeps with it`),
})
