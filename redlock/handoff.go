package redlock

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locklab/locklab/internal/token"
)

// Hook points of Lock with a [Notifier].
const (
	// HookRefused fires after the first SET round missed a majority (the
	// lock looked free, but was taken), before the waiter joins the
	// queues: the window in which a release goes unseen by a waiter that
	// only listens for messages (the lost wake-up).
	HookRefused = "refused"

	// HookQueued fires after the waiter's first round in the queues, when
	// that round did not already give it the lock, before it starts
	// waiting for hand-offs.
	HookQueued = "queued"
)

// maxRetired bounds how many retired tokens a waiter remembers per node
// for the final cleanup (see waiter.retired).
const maxRetired = 8

// queueKey returns the wait queue's key for the lock key: in the same
// Redis Cluster slot, as the scripts touch both. A key with a hash tag
// ("a{b}c") keeps its tag; any other key becomes the tag ("{key}:q").
func queueKey(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key + ":q"
		}
	}
	return "{" + key + "}:q"
}

// A waiter is one Lock call waiting in the queues.
//
// Its token changes at every round: "<id>.<generation>". Each round
// retires the previous token on every node (acquire.lua) and counts only
// the nodes that hold the new one, as the round's replies and the hand-off
// messages for that generation report. So every node counted was set to
// the current token after the round started (since), and a late message
// about an earlier generation can never be counted.
type waiter struct {
	m     *Mutex
	reg   *registration
	id    string // "<notifier id>.<ttl ms>.<random>": the token without its generation
	score string // when Lock was called, in µs since the Unix epoch: the waiter's place in every queue
	ttl   string // the TTL in milliseconds, for the scripts
	gen   int

	held  []bool    // held[i]: node i holds the current token
	since time.Time // sent before the current round: every node in held was set after it
	split time.Duration

	// retired[i] are tokens retired by rounds that failed on node i: the
	// node may still hold or queue them. Unlock, or leaving the queues,
	// cleans them up; at most maxRetired per node are remembered (an older
	// one left behind holds its node for at most a TTL).
	retired [][]string
}

func (w *waiter) token() string { return w.id + "." + strconv.Itoa(w.gen) }

// heldCount returns how many nodes hold the current token.
func (w *waiter) heldCount() int {
	n := 0
	for _, h := range w.held {
		if h {
			n++
		}
	}
	return n
}

// partial reports whether the waiter holds some nodes, but not a majority.
func (w *waiter) partial() bool {
	n := w.heldCount()
	return n > 0 && n < w.m.quorum()
}

// lockQueued is Lock with a Notifier. While the lock looks free it makes
// one SET round, as without a Notifier; when that misses a majority, or
// the last Lock or Unlock showed other clients waiting, it waits in the
// queues.
func (m *Mutex) lockQueued(ctx context.Context) error {
	if err := ctxErr(ctx); err != nil {
		return errors.Join(ErrNotObtained, err)
	}
	n := m.opts.notifier
	ttl := strconv.FormatInt(m.opts.ttl.Milliseconds(), 10)
	w := &waiter{
		m:       m,
		id:      n.id + "." + ttl + "." + token.New(),
		score:   strconv.FormatInt(time.Now().UnixMicro(), 10),
		ttl:     ttl,
		held:    make([]bool, len(m.clients)),
		split:   firstSplitCheck,
		retired: make([][]string, len(m.clients)),
	}
	reg, err := n.register(w.id)
	if err != nil {
		return errors.Join(ErrNotObtained, err)
	}
	defer n.unregister(w.id)
	w.reg = reg

	old := "" // the token to retire in the first round in the queues
	if !m.contended.Load() {
		tok := w.token()
		out, res, err := m.setRound(ctx, tok)
		switch {
		case out == acquired:
			return nil
		case out == failed:
			m.release(ctx, tok, nil, nil, 0)
			return err
		case m.unreachable(res):
			m.release(ctx, tok, nil, nil, 0)
			return m.quorumErr("lock", res)
		}
		if res.ok > 0 || len(res.failed) > 0 {
			old = tok // some nodes hold it, or may
		}
		m.contended.Store(true)
		m.hook(ctx, HookRefused)
	}
	return w.wait(ctx, old)
}

// wait joins the queues with a first round and waits until a majority of
// nodes hold the waiter's token: handed over by holders' Unlocks (as
// messages report) or taken in the waiter's own rounds. A waiter that holds
// no node runs a round every ttl/4: it refreshes its place in every queue
// and takes the lock from a holder that died, once its keys expire. A
// waiter that holds some nodes, but not a majority, runs one after
// firstSplitCheck, doubling up to the per-node timeout: the rest of a
// release arrives within that, so a partial hold that lasts is a split,
// which its rounds resolve (see acquire.lua and the package doc).
func (w *waiter) wait(ctx context.Context, old string) error {
	m := w.m
	if err := w.round(ctx, old); err != nil {
		return err
	}
	if ok, err := w.tryHold(ctx); ok || err != nil {
		return err
	}
	m.hook(ctx, HookQueued)

	check := time.NewTimer(w.nextCheck())
	defer check.Stop()
	for {
		select {
		case <-w.reg.signal:
			wasPartial := w.partial()
			w.reg.take(w.held)
			if ok, err := w.tryHold(ctx); ok || err != nil {
				return err
			}
			if !wasPartial && w.partial() {
				check.Reset(w.nextCheck())
			}
		case <-check.C:
			if err := w.round(ctx, w.token()); err != nil {
				return err
			}
			if ok, err := w.tryHold(ctx); ok || err != nil {
				return err
			}
			check.Reset(w.nextCheck())
		case <-ctx.Done():
			return w.abandon(ctx, errors.Join(ErrNotObtained, ctx.Err()))
		case <-m.opts.notifier.done:
			return w.abandon(ctx, errors.Join(ErrNotObtained, errNotifierClosed))
		}
	}
}

// nextCheck returns when the waiter should next run a round itself.
func (w *waiter) nextCheck() time.Duration {
	if w.partial() {
		d := w.split
		w.split = min(2*w.split, max(w.m.opts.nodeTimeout, firstSplitCheck))
		return d
	}
	w.split = firstSplitCheck
	return max(w.m.opts.ttl/checkFraction, time.Millisecond)
}

// round runs acquire.lua on every node with a new token, retiring old (""
// for none), and records which nodes hold the new token. When the round
// fails (ctx ended, quorum unreachable) it leaves the queues and returns
// the error.
func (w *waiter) round(ctx context.Context, old string) error {
	m := w.m
	w.gen++
	w.reg.setGen(w.gen)
	tok := w.token()
	start := time.Now() // before any node can set tok
	args := []any{tok, w.score, w.ttl, old}
	res := m.fanOut(ctx, 0, func(ctx context.Context, _ int, c Client) (int64, error) {
		return acquireScript.Run(ctx, c, m.keys, args...).Int64()
	})
	w.since = start
	for i, rp := range res.replies {
		w.held[i] = rp.err == nil && rp.code > 0
		if rp.err != nil && old != "" && len(w.retired[i]) < maxRetired {
			w.retired[i] = append(w.retired[i], old)
		}
	}
	w.reg.take(w.held) // hand-offs that came before the replies
	switch err := ctxErr(ctx); {
	case err != nil:
		return w.abandon(ctx, errors.Join(ErrNotObtained, err))
	case m.unreachable(res):
		return w.abandon(ctx, m.quorumErr("lock", res))
	}
	return nil
}

// tryHold takes the lock if a majority of nodes hold the current token
// with validity left, counted from the start of the round that sent it.
// When no validity is left (the waiter was paused, or waited long between
// rounds), it runs one more round, which resets the TTL on the nodes it
// keeps, and tries once more; after that it goes on waiting.
func (w *waiter) tryHold(ctx context.Context) (bool, error) {
	m := w.m
	ttl := m.opts.ttl
	for refreshed := false; w.heldCount() >= m.quorum(); refreshed = true {
		m.hook(ctx, HookAcquiredQuorum)
		if validity(ttl, time.Since(w.since)) > 0 {
			cleanup := make([]nodeCleanup, len(w.held))
			for i, h := range w.held {
				cleanup[i] = nodeCleanup{dequeue: !h, retired: w.retired[i]}
			}
			m.hold(w.token(), w.since.Add(ttl-drift(ttl)), slices.Clone(w.held), cleanup)
			return true, nil
		}
		if refreshed {
			break
		}
		if err := w.round(ctx, w.token()); err != nil {
			return false, err
		}
	}
	return false, nil
}

// abandon leaves every queue and passes on any node that holds the
// waiter's token (it may have been handed over as the waiter gave up),
// then returns cause. It runs detached from ctx's cancellation, as Unlock
// does.
func (w *waiter) abandon(ctx context.Context, cause error) error {
	cleanup := make([]nodeCleanup, len(w.held))
	for i := range cleanup {
		cleanup[i] = nodeCleanup{dequeue: true, retired: w.retired[i]}
	}
	if res := w.m.release(ctx, w.token(), cleanup, nil, 0); w.m.unreachable(res) {
		return errors.Join(cause, w.m.quorumErr("leave queues", res))
	}
	return cause
}
