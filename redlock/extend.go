package redlock

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/locklab/locklab/internal/retry"
	"github.com/locklab/locklab/observe"
)

// Extend sets the TTL of the lock's key to ttl on every node in parallel,
// with an owner-checked PEXPIRE, and recomputes the validity from the time
// the first PEXPIRE was sent, as an acquisition does: validity = ttl −
// elapsed − drift(ttl). It succeeds only if a majority was extended and
// validity is left; then [Mutex.Until] moves (ttl may be shorter than what
// is left, and Until then moves back). Otherwise Until is unchanged and the
// lock may still be held until then; the error wraps [ErrNotHeld] (the
// token is gone from too many nodes, or no validity is left),
// [ErrQuorumUnreachable] with per-node errors, or ctx.Err(). A ttl below
// 1ms returns an error wrapping [ErrInvalid]; ttl is sent in whole
// milliseconds.
func (m *Mutex) Extend(ctx context.Context, ttl time.Duration) error {
	if err := m.check(); err != nil {
		return err
	}
	if ttl < time.Millisecond {
		return invalid("Extend(ctx, %v): ttl must be at least 1ms", ttl)
	}
	ttl = ttl.Truncate(time.Millisecond)
	tok := m.Token()
	if tok == "" {
		return ErrNotHeld
	}
	if err := retry.CtxErr(ctx); err != nil {
		return fmt.Errorf("redlock: extend %q: %w", m.key, err)
	}
	start := time.Now()
	res, elapsed := m.extendRound(ctx, tok, ttl)
	switch err := retry.CtxErr(ctx); {
	case err != nil:
		return fmt.Errorf("redlock: extend %q: %w", m.key, err)
	case m.unreachable(res):
		return m.quorumErr("extend", res)
	case res.ok < m.quorum():
		err := fmt.Errorf("%w: %q: extended on %d of %d nodes, quorum %d",
			ErrNotHeld, m.key, res.ok, len(m.clients), m.quorum())
		if m.f.Obs != nil {
			m.mu.Lock()
			held := time.Since(m.since)
			m.mu.Unlock()
			m.f.Report(observe.Lost, held, err)
		}
		return err
	case validity(ttl, elapsed) <= 0:
		return fmt.Errorf("%w: %q: a majority extended after %v, leaving no validity of the %v ttl",
			ErrNotHeld, m.key, elapsed.Round(time.Microsecond), ttl)
	}
	m.mu.Lock()
	if m.held != nil && m.held.tok == tok { // not unlocked meanwhile
		m.until = start.Add(ttl - drift(ttl))
	}
	m.mu.Unlock()
	return nil
}

// extendRound runs the owner-checked PEXPIRE on every node and returns the
// result and how long the round took.
func (m *Mutex) extendRound(ctx context.Context, tok string, ttl time.Duration) (result, time.Duration) {
	ms := strconv.FormatInt(ttl.Milliseconds(), 10)
	start := time.Now()
	res := m.fanOut(ctx, 0, func(ctx context.Context, _ int, c Client) (int64, error) {
		return extendScript.Run(ctx, c, []string{m.key}, tok, ms).Int64()
	}, nil, nil)
	return res, time.Since(start)
}
