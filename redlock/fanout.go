package redlock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// drift is the allowance for clock drift between this process and the
// nodes over a lease of ttl: 1% of ttl (clocks that count elapsed time at
// rates up to 1% apart) plus 2ms (1ms for the millisecond precision of
// Redis expiry, 1ms of minimum drift), as redlock-rb and redsync compute it.
func drift(ttl time.Duration) time.Duration {
	return ttl/100 + 2*time.Millisecond
}

// validity is how long a lock stays valid after a round that took elapsed,
// counted from the round's start: ttl − elapsed − drift(ttl). The lock is
// held only if it is positive.
func validity(ttl, elapsed time.Duration) time.Duration {
	return ttl - elapsed - drift(ttl)
}

// reply is one node's answer in a round.
type reply struct {
	code    int64 // what the command or script returned; see each caller
	err     error // a *NodeError when the node failed or did not answer in time
	pending bool  // still running when a majority had already succeeded
}

// result is what the nodes answered in one round.
type result struct {
	replies []reply // replies[i] is node i's
	ok      int     // replies with a positive code (SET done, token deleted or extended)
	failed  []error // one *NodeError per node that failed or did not answer in time
}

// count returns how many nodes answered code.
func (r result) count(code int64) int {
	n := 0
	for _, rp := range r.replies {
		if rp.err == nil && !rp.pending && rp.code == code {
			n++
		}
	}
	return n
}

// nodeCall is one node's part of a round: i is the node's index in the
// slice given to New.
type nodeCall func(ctx context.Context, i int, c Client) (int64, error)

// slot is where one node's goroutine leaves its answer.
type slot struct {
	code int64
	err  error
	done atomic.Bool // set after code and err are written
}

// fanOut runs call on every node at once, each in its own goroutine with a
// context bounded by the per-node timeout, and returns when every node has
// answered, when enough nodes (if enough > 0) have answered with a positive
// code, or when the timeout (or ctx) has ended, whichever comes first. A
// node that has not answered by then counts as failed, or, when enough
// nodes succeeded, as pending. The calling goroutine is woken once, not
// once per node.
//
// The nodes' calls see ctx's values, not its cancellation: a command that
// was sent is left to finish, within the per-node timeout, rather than cut
// off with its effect unknown. Each node's commands from one Mutex run in
// the order fanOut was called: a call waits until this Mutex's previous
// call on that node has ended (see nodeTails), and is not sent at all if
// that takes longer than the per-node timeout. So a SET still in flight
// when Lock returned at a majority reaches its node before the release
// that Unlock sends there.
//
// fanOut does not wait for a node that has not answered: the timeout holds
// even for a client that ignores context deadlines (go-redis with
// ContextTimeoutEnabled false), whose call stays blocked on the socket. Its
// goroutine exits when the call returns: at the client's own ReadTimeout or
// WriteTimeout, when the node answers, or when the client is closed,
// whichever comes first. It writes only its own slot, which fanOut no
// longer reads once it has moved on, and the node's tail.
func (m *Mutex) fanOut(parent context.Context, enough int, call nodeCall) result {
	ctx, cancel := context.WithTimeoutCause(context.WithoutCancel(parent), m.opts.nodeTimeout, errNodeTimeout)
	release := cancel // by the last node to end, which may be after fanOut returns
	n := len(m.clients)
	slots := make([]slot, n)
	var pending, oks atomic.Int32
	pending.Store(int32(n))
	ready := make(chan struct{}) // closed by the node that ends the wait
	var readyOnce sync.Once
	signal := func() { readyOnce.Do(func() { close(ready) }) }
	tails := m.nodeTails()
	for i, c := range m.clients {
		prev, mine := tails[i][0], tails[i][1]
		go func() {
			s := &slots[i]
			if prev != nil {
				select {
				case <-prev:
				case <-ctx.Done():
				}
			}
			if ctx.Err() == nil {
				s.code, s.err = call(ctx, i, c)
			} else {
				s.err = errBehind
			}
			s.done.Store(true)
			if s.err == nil && s.code > 0 && int(oks.Add(1)) == enough {
				signal()
			}
			if pending.Add(-1) == 0 {
				signal()
				release()
			}
			if prev != nil {
				<-prev // never let this node's next command overtake prev
			}
			close(mine)
		}()
	}
	select {
	case <-ready:
	case <-ctx.Done():
	case <-parent.Done():
	}

	res := result{replies: make([]reply, n)}
	quorum := enough > 0 && int(oks.Load()) >= enough
	var late error
	for i := range slots {
		s, rp := &slots[i], &res.replies[i]
		switch {
		case !s.done.Load() && quorum:
			rp.pending = true
		case !s.done.Load():
			// Still running: it answers too late to count, and it writes
			// only its slot, which is not read again.
			if late = context.Cause(ctx); late == nil {
				late = context.Cause(parent)
			}
			if late == errNodeTimeout {
				late = fmt.Errorf("%w (%v)", errNodeTimeout, m.opts.nodeTimeout)
			}
			rp.err = &NodeError{Index: i, Addr: m.addrs[i], Err: late}
		case s.err != nil:
			err := s.err
			if err == errBehind || ctxErr(parent) == nil && isTimeout(err) {
				// A client that honours deadlines gives up with its own
				// error as the per-node timeout fires; say which it was.
				err = fmt.Errorf("%w (%v): %w", errNodeTimeout, m.opts.nodeTimeout, err)
			}
			rp.err = &NodeError{Index: i, Addr: m.addrs[i], Err: err}
		default:
			rp.code = s.code
			if s.code > 0 {
				res.ok++
			}
		}
		if rp.err != nil {
			res.failed = append(res.failed, rp.err)
		}
	}
	return res
}

// nodeTails returns, for each node, the channel closed when this Mutex's
// previous command there has ended (nil for none) and the one this call
// closes when its own has, which the next call waits for.
func (m *Mutex) nodeTails() [][2]chan struct{} {
	out := make([][2]chan struct{}, len(m.clients))
	m.tailMu.Lock()
	defer m.tailMu.Unlock()
	if m.tails == nil {
		m.tails = make([]chan struct{}, len(m.clients))
	}
	for i, prev := range m.tails {
		select {
		case <-prev:
			prev = nil // ended: nothing to wait for
		default:
		}
		mine := make(chan struct{})
		out[i] = [2]chan struct{}{prev, mine}
		m.tails[i] = mine
	}
	return out
}

// isTimeout reports whether err is a context deadline or a network
// timeout, as a client that honours context deadlines returns.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// ctxErr returns ctx.Err(), or [context.DeadlineExceeded] once ctx's
// deadline has passed even if ctx has not noticed yet: go-redis sets socket
// deadlines from ctx, and under load the socket's "i/o timeout" can come
// before the context's own timer fires. Either way the caller's deadline is
// what ended the round, and the error must say so.
func ctxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}
