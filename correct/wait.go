package correct

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// A waiter is how [Mutex.Lock] waits for its turn. It calls try, which
// makes one acquisition attempt and reports whether it got the lock, until
// try succeeds or fails, or the waiter gives up. It returns:
//
//   - nil once try has acquired the lock;
//   - try's error, unchanged, when try fails (try already wraps transport
//     errors and joins ErrNotObtained with ctx.Err() when ctx ended during
//     an attempt);
//   - errors.Join(ErrNotObtained, ctx.Err()) when ctx ends while waiting;
//   - ErrNotObtained when it runs out of tries.
//
// Mutex knows nothing else about waiting. poll, below, is the only waiter
// today: it sleeps and tries again. A waiter woken by Redis when the key is
// deleted, or one that hands the lock over in FIFO order, would be another
// implementation of this interface, chosen by an option.
type waiter interface {
	wait(ctx context.Context, try func(context.Context) (bool, error)) error
}

// poll is a waiter that retries after a delay chosen by a [DelayFunc].
//
// Each failed try costs one SET NX; nothing tells a poller that the lock
// was released, so between the release and its next try the lock is free
// and unused. The delay trades that idle time (and fairness: a lucky poller
// may win twice in a row) against load on Redis.
type poll struct {
	delay DelayFunc
	tries int // attempts before giving up; 0 means no limit
}

func (p poll) wait(ctx context.Context, try func(context.Context) (bool, error)) error {
	for attempt := 1; ; attempt++ {
		ok, err := try(ctx)
		if err != nil || ok {
			return err
		}
		if p.tries > 0 && attempt >= p.tries {
			return ErrNotObtained
		}
		if err := sleep(ctx, p.delay(attempt)); err != nil {
			return errors.Join(ErrNotObtained, err)
		}
	}
}

// sleep waits for d or until ctx ends, whichever comes first, and returns
// ctx.Err() in the second case.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// backoff is the default [DelayFunc]: exponential backoff with full jitter.
// The ceiling starts at defaultMinDelay and doubles with each failed try up
// to defaultMaxDelay; the delay is uniform in [0, ceiling). Jitter spreads
// out waiters that were refused together, so they do not all come back in
// the same millisecond; the cap bounds how long the lock can sit free
// before the next poll. math/rand/v2 is fine here: a delay needs no
// unpredictability, and its top-level functions are safe for concurrent
// use.
func backoff(attempt int) time.Duration {
	ceiling := defaultMinDelay
	for i := 1; i < attempt && ceiling < defaultMaxDelay; i++ {
		ceiling *= 2
	}
	return rand.N(min(ceiling, defaultMaxDelay))
}
