package correct

import (
	"context"
	"errors"

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
// it never decides safety, which rests on SET NX and the owner-checked
// scripts alone.
type waiter interface {
	wait(ctx context.Context, h *holder) error
}

// poll is the waiter that tries SET NX, sleeps a delay chosen by the
// retry policy, and tries again, with a fresh token each time.
//
// Each failed try costs one command, and nothing tells a poller that the
// lock was released, so between the release and its next try the lock is
// free and unused. Nobody is in line: the client that just released
// usually takes the lock straight back (barging), so under steady
// contention some waiters wait many times longer than others.
type poll struct{ policy retry.Policy }

func (p poll) wait(ctx context.Context, h *holder) error {
	var short error // the last try that took the lock too late, if any
	err := retry.Do(ctx, p.policy, ErrNotObtained, func(ctx context.Context, n int) (bool, error) {
		get := n > 1 // after a refusal, another is likely
		ok, err := h.acquire(ctx, token.New(), get, !get)
		if isShort(err) {
			short = err // given back: try again
			return false, nil
		}
		return ok, err
	})
	return joinShort(err, short)
}

// joinShort adds to err, Lock's error when it gave up, the last try that
// took the lock too late (see Mutex.Lock): why a Lock on a slow link never
// got it.
func joinShort(err, short error) error {
	if short != nil && errors.Is(err, ErrNotObtained) {
		return errors.Join(err, short)
	}
	return err
}
