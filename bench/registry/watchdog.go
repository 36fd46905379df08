package registry

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/watchdog"
)

// watchdog: a lock renewed in the background until Unlock, with its
// defaults (renewal every TTL/3) and the common TTL. Its Lock context is
// also the holder's context, so the adapter detaches the hold from the
// run's end (see holdPast).
func init() {
	register(&Lock{Name: "watchdog", Order: 40, LossSignal: true, Nodes: 1, Connect: connectWatchdog, GaveUp: gaveUpOn(watchdog.ErrNotObtained), Claims: watchdogClaims})
}

func connectWatchdog(e Env) (Contender, error) {
	return e.OneServer(func(c redis.UniversalClient, key string) Locker {
		return &watchdogLocker{m: watchdog.New(c, key, watchdog.WithTTL(e.TTL))}
	}), nil
}

type watchdogLocker struct {
	m    *watchdog.Mutex
	done context.CancelFunc // ends the holder's context after Unlock
}

func (l *watchdogLocker) Lock(ctx context.Context) error {
	done, err := holdPast(ctx, l.m.Lock, func() { _ = l.m.Unlock(context.Background()) })
	if err != nil {
		return err
	}
	l.done = done
	return nil
}

func (l *watchdogLocker) Unlock(ctx context.Context) error {
	err := l.m.Unlock(ctx)
	if l.done != nil {
		l.done()
		l.done = nil
	}
	return err
}

// lost is closed when the hold ends for any reason, Unlock included.
func (l *watchdogLocker) lost() <-chan struct{} { return l.m.Done() }

// watchdogClaims: a short lease renewed while held; Done tells the holder
// when its deadline passes.
var watchdogClaims = Claims{
	"pause":      names(`a holder paused past its TTL: the renewal sleeps with it`),
	"lost-reply": survives(`a lost reply sent again`),
	"late":       survives(`a command delivered late`),
	"failover":   names(`a failover before the key replicates: the new primary forgets the key`),
	"restart":    names(`a restart without data: the server forgets the key`),
	"latency":    names(`a write delayed in the network past the TTL: the holder is told when its deadline passes, but a write already sent still lands`),
	"eviction":   survives(`eviction: Lock refuses a server that evicts`),
	"clock":      names(`a clock jump on the server`),
	"kill":       survives(`a killed holder: its short lease dies with the process`),
	"batch-lost": survives(`a batch of the AutoPipeliner sent twice: the release answers from its receipt, the extend sets the same TTL again`),
}
