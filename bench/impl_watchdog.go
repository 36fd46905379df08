package main

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
	register(&impl{name: "watchdog", nodes: 1, connect: connectWatchdog, gaveUp: gaveUpOn(watchdog.ErrNotObtained)})
}

func connectWatchdog(e env) (contender, error) {
	return e.oneServer(func(c *redis.Client, key string) locker {
		return &watchdogLocker{m: watchdog.New(c, key, watchdog.WithTTL(e.ttl))}
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
