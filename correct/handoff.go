package correct

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Hook points of Lock with a [Notifier].
const (
	// HookRefused fires after SET NX found the lock taken and before the
	// waiter joins the queue: the window in which a release goes unseen by
	// a waiter that only listens for messages (the lost wake-up).
	HookRefused = "refused"

	// HookQueued fires right after the waiter's token joined the wait
	// queue, and after the check for a lock released meanwhile, before it
	// starts waiting for the hand-off.
	HookQueued = "queued"
)

// queueKey returns the wait queue's key for the lock key: in the same
// Redis Cluster slot, as the scripts touch both. A key with a hash tag
// ("a{b}c") keeps its tag; any other key becomes the tag ("{key}:q"),
// which hashes like the key itself.
func queueKey(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key + ":q"
		}
	}
	return "{" + key + "}:q"
}

// lockQueued is Lock with a Notifier. While the lock looks free it tries
// SET NX first, one round trip as without a Notifier; when the last try or
// release showed other clients waiting, it goes straight to the queue.
func (m *Mutex) lockQueued(ctx context.Context) error {
	if err := ctxErr(ctx); err != nil {
		return errors.Join(ErrNotObtained, err)
	}
	if !m.contended.Load() {
		ok, err := m.acquire(ctx)
		if err != nil || ok {
			return err
		}
		m.contended.Store(true)
		m.at(ctx, HookRefused)
	}
	return m.waitInQueue(ctx)
}

// waitInQueue joins the wait queue with RPUSH and waits for the holder's
// Unlock to hand the lock over. A check with queued.lua every ttl/4 bounds
// the wait when no hand-off will come: the holder died and the key expired,
// the lock was released just before we queued, a release skipped us as
// dead while our subscription was reconnecting, or the message was lost.
//
// Until after a hand-off counts the lease from the last moment we know
// preceded the hand-off: when we sent RPUSH, or the last check that found
// the lock still held by someone else. It errs early by at most the time
// between those and the hand-off (at most ttl/4 after a check).
func (m *Mutex) waitInQueue(ctx context.Context) error {
	n := m.notify
	tok := n.newToken(m.ttl)
	wake, err := n.register(tok)
	if err != nil {
		return errors.Join(ErrNotObtained, err)
	}
	defer n.unregister(tok)

	before := time.Now() // precedes any hand-off to tok
	pos, err := n.client.RPush(ctx, m.queue, tok).Result()
	if err != nil {
		// RPUSH may have landed without a reply: leave no token behind.
		return m.abandon(ctx, tok, fmt.Errorf("correct: queue %q: %w", m.key, err))
	}
	if pos == 1 {
		// First in line: the holder may have released before we queued,
		// and then nobody would hand the lock to us. Check now.
		if held, err := m.checkQueued(ctx, tok, &before); err != nil || held {
			return err
		}
	}
	m.at(ctx, HookQueued)

	check := time.NewTimer(m.checkEvery())
	defer check.Stop()
	for {
		select {
		case <-wake:
			m.hold(tok, before)
			m.at(ctx, HookAcquired)
			return nil
		case <-check.C:
			if held, err := m.checkQueued(ctx, tok, &before); err != nil || held {
				return err
			}
			check.Reset(m.checkEvery())
		case <-ctx.Done():
			return m.abandon(ctx, tok, errors.Join(ErrNotObtained, ctx.Err()))
		case <-n.done:
			return m.abandon(ctx, tok, errors.Join(ErrNotObtained, errNotifierClosed))
		}
	}
}

// checkEvery is how often a queued waiter checks the lock itself.
func (m *Mutex) checkEvery() time.Duration { return max(m.ttl/4, time.Millisecond) }

// checkQueued runs queued.lua once. It reports whether tok now holds the
// lock, and on "still held by someone else" moves *before up to the moment
// the check was sent.
func (m *Mutex) checkQueued(ctx context.Context, tok string, before *time.Time) (bool, error) {
	sent := time.Now()
	r, err := queuedScript.Run(ctx, m.client, []string{m.key, m.queue}, tok, m.ttl.Milliseconds()).Int64()
	switch {
	case err != nil:
		if cerr := ctxErr(ctx); cerr != nil {
			err = cerr
		}
		return false, m.abandon(ctx, tok, errors.Join(ErrNotObtained, fmt.Errorf("correct: check queue %q: %w", m.key, err)))
	case r == 1: // took the free lock
		m.hold(tok, sent)
	case r == 2: // handed to us; the message is late or lost
		m.hold(tok, *before)
	default:
		*before = sent
		return false, nil
	}
	m.at(ctx, HookAcquired)
	return true, nil
}

// abandon takes tok out of the queue and, if the lock was handed to tok
// meanwhile, passes it on to the next waiter, then returns cause. It runs
// detached from ctx's cancellation, as Unlock does.
func (m *Mutex) abandon(ctx context.Context, tok string, cause error) error {
	if _, err := m.release(ctx, tok, true); err != nil {
		return errors.Join(cause, err)
	}
	return cause
}

// hold records tok as held, with a lease counted from leaseStart.
func (m *Mutex) hold(tok string, leaseStart time.Time) {
	m.mu.Lock()
	m.token, m.until, m.since = tok, leaseStart.Add(m.ttl), time.Now()
	m.mu.Unlock()
}
