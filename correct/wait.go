package correct

import (
	"context"
	"time"

	"github.com/locklab/locklab/internal/frame"
	"github.com/locklab/locklab/internal/retry"
	"github.com/locklab/locklab/internal/token"
)

// A waiter is how [Mutex.Lock] gets its turn: every Lock goes through the
// Mutex's waiter, chosen by [New] from the options. It is given the
// Mutex's holder (the key's commands and the current hold), not the Mutex.
// It returns nil once the holder holds the lock; an error wrapping
// [ErrNotObtained] when it gives up (joined with ctx.Err() when ctx ended
// it); a transport error, wrapped, at once.
//
// Two implement it: poll, below (try, sleep, try again), and queue, in
// queue.go (wait in a FIFO queue and be handed the lock), chosen by
// [WithNotifier]. Waiting decides latency, fairness and the load on Redis;
// it never decides safety, which rests on take.lua (SET NX) and the owner-checked
// scripts alone. sent is a moment before anything of the wait is sent: the
// first attempt's lease may count from it.
type waiter interface {
	wait(ctx context.Context, h *holder, sent time.Time) error
}

// poll is the waiter that tries take.lua, sleeps a delay chosen by the
// retry policy, and tries again, with a fresh token each time.
//
// Each failed try costs one command, and nothing tells a poller that the
// lock was released, so between the release and its next try the lock is
// free and unused. Nobody is in line: the client that just released
// usually takes the lock straight back (barging), so under steady
// contention some waiters wait many times longer than others.
type poll struct{ policy retry.Policy }

func (p poll) wait(ctx context.Context, h *holder, sent time.Time) error {
	var late frame.Shorts // tries that took the lock too late, and gave it back
	err := retry.Do(ctx, p.policy, ErrNotObtained, func(ctx context.Context, n int) (bool, error) {
		if n > 1 {
			sent = time.Now() // after the delay
		}
		return late.Keep(h.acquire(ctx, token.New(), sent))
	})
	return late.Join(err, ErrNotObtained)
}
