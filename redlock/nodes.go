package redlock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"

	"github.com/locklab/locklab/internal/retry"
)

// This file is the transport: one call per node, in parallel, bounded by
// the per-node timeout. What the replies mean (quorum, validity) is in
// rounds.go.

// Goroutines.
//
// Each round (acquire, extend, release, a waiter's round in the queues)
// starts one goroutine per node and waits for them only up to the per-node
// timeout. With a client that honours context deadlines (go-redis
// Options.ContextTimeoutEnabled) every goroutine ends by then, as its call
// is cancelled. With one that does not, a call to a frozen node stays
// blocked after the method returned, and its goroutine exits when the call
// returns: at that client's ReadTimeout or WriteTimeout, when the node
// answers, or when the client is closed. No goroutine outlives the closing
// of the clients passed to [New]. A [Notifier] runs one goroutine per node
// from [NewNotifier] until [Notifier.Close].

// reply is one node's answer in a round.
type reply struct {
	code    int64 // what the command or script returned; see each caller
	err     error // a *NodeError when the node failed or did not answer in time
	pending bool  // still running when enough nodes had already succeeded
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

// onlyTimeouts reports whether every failed node failed by not answering
// in time: on a loaded machine, a node that is up. Such a round is worth
// trying again while the caller's context lives; a node that refused the
// connection or answered with an error is not.
func (r result) onlyTimeouts() bool {
	for _, err := range r.failed {
		if !isTimeout(err) {
			return false
		}
	}
	return true
}

// unknown reports whether some node's outcome is unknown: it failed or did
// not answer in time (its command may have run, or may still), or its call
// was still running when the round returned.
func (r result) unknown() bool {
	for _, rp := range r.replies {
		if rp.err != nil || rp.pending {
			return true
		}
	}
	return false
}

// nodeCall is one node's part of a round: i is the node's index in the
// slice given to New.
type nodeCall func(ctx context.Context, i int, c Client) (int64, error)

// landed is told, in the node's goroutine, how a call ended, even when
// that is after fanOut returned: a round's caller uses it to release a
// node whose SET landed after the attempt had been given up (see
// attempt.landed). It may be nil.
type landed func(i int, code int64, err error)

// slot is where one node's goroutine leaves its answer.
type slot struct {
	code int64
	err  error
	done atomic.Bool // set after code and err are written
}

// fanOut runs call on every node at once, each in its own goroutine with a
// context bounded by the per-node timeout, and returns when every node has
// answered, when enough nodes (if enough > 0) have answered with a positive
// code, when stop (if not nil) is closed, or when the timeout (or ctx) has
// ended, whichever comes first. A node that has not answered by then
// counts as failed, or, when enough nodes succeeded or stop was closed, as
// pending. The calling goroutine is woken once, not
// once per node.
//
// The nodes' calls see ctx's values, not its cancellation: a command that
// was sent is left to finish, within the per-node timeout, rather than cut
// off with its effect unknown. A call still running when fanOut returns
// goes on in the background; done, if not nil, is told how it ended, and
// [Mutex.Settle] waits for it.
//
// Calls are not ordered per node: a command sent late (a SET of a round
// that returned at a majority) may land after a later one (the release).
// Nothing depends on the order. A late SET that lands after its attempt
// was given up is released when its reply comes back (done); should that
// reply be lost too, the key expires after its TTL, on that node only.
// An earlier design sent each Mutex's commands to a node in order, each
// waiting for the one before; one call stuck on a dead connection then
// held up every later command to that node ("an earlier command to this
// node had not ended"), and a Mutex in use made no progress for seconds
// after its nodes restarted.
//
// fanOut does not wait for a node that has not answered: the timeout holds
// even for a client that ignores context deadlines (go-redis with
// ContextTimeoutEnabled false), whose call stays blocked on the socket. Its
// goroutine exits when the call returns: at the client's own ReadTimeout
// or WriteTimeout, when the node answers, or when the client is closed.
// It writes only its own slot, which fanOut no longer reads once it has
// moved on.
func (m *Mutex) fanOut(parent context.Context, enough int, call nodeCall, done landed, stop <-chan struct{}) result {
	ctx, cancel := context.WithTimeoutCause(context.WithoutCancel(parent), m.o.nodeTimeout, errNodeTimeout)
	release := cancel // by the last node to end, which may be after fanOut returns
	n := len(m.clients)
	slots := make([]slot, n)
	var pending, oks atomic.Int32
	pending.Store(int32(n))
	ready := make(chan struct{}) // closed by the node that ends the wait
	var readyOnce sync.Once
	signal := func() { readyOnce.Do(func() { close(ready) }) }
	m.inflight.add(n)
	for i, c := range m.clients {
		go func() {
			defer m.inflight.done()
			s := &slots[i]
			code, err := call(ctx, i, c)
			if done != nil {
				// Before the round can return: a node that answered in time
				// has ended by then (a late one may release itself here).
				done(i, code, err)
			}
			s.code, s.err = code, err
			s.done.Store(true)
			if err == nil && code > 0 && int(oks.Add(1)) == enough {
				signal()
			}
			if pending.Add(-1) == 0 {
				signal()
				release()
			}
		}()
	}
	stopped := false
	select {
	case <-ready:
	case <-ctx.Done():
	case <-parent.Done():
	case <-stop:
		stopped = true
	}

	res := result{replies: make([]reply, n)}
	quorum := stopped || enough > 0 && int(oks.Load()) >= enough
	for i := range slots {
		s, rp := &slots[i], &res.replies[i]
		switch {
		case !s.done.Load() && quorum:
			rp.pending = true
		case !s.done.Load():
			// Still running: it answers too late to count, and it writes
			// only its slot, which is not read again.
			late := context.Cause(ctx)
			if late == nil {
				late = context.Cause(parent)
			}
			if late == errNodeTimeout {
				late = fmt.Errorf("%w (%v)", errNodeTimeout, m.o.nodeTimeout)
			}
			rp.err = &NodeError{Index: i, Addr: m.addrs[i], Err: late}
		case s.err == errLater:
			rp.pending = true // released when its earlier call ends
		case s.err != nil:
			err := s.err
			if retry.CtxErr(parent) == nil && isTimeout(err) {
				// A client that honours deadlines gives up with its own
				// error as the per-node timeout fires; say which it was.
				err = fmt.Errorf("%w (%v): %w", errNodeTimeout, m.o.nodeTimeout, err)
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

// Settle waits until every command this Mutex has sent has ended, or ctx
// ends. Lock returns once a majority of nodes holds the lock, and Unlock
// of a lock taken by a SET round once a majority has released it; the
// commands still in flight to slower nodes end in the background, each
// within the per-node timeout. Nothing needs Settle for safety or cleanup
// (a command that lands after a later one, a SET after the release of its
// attempt, is undone when its reply comes back); it is for callers that
// read the nodes themselves right after a Lock (tests, a tool that shows
// each node), or that close the clients at once.
func (m *Mutex) Settle(ctx context.Context) error {
	if err := m.check(); err != nil {
		return err
	}
	return m.inflight.wait(ctx)
}

// calls counts a Mutex's node calls still running, for Settle. Unlike a
// sync.WaitGroup it may be waited on while calls are being added.
type calls struct {
	mu   sync.Mutex // protects n and idle
	n    int
	idle chan struct{} // closed when n drops to 0; nil while n is 0
}

func (c *calls) add(k int) {
	c.mu.Lock()
	if c.n == 0 {
		c.idle = make(chan struct{})
	}
	c.n += k
	c.mu.Unlock()
}

func (c *calls) done() {
	c.mu.Lock()
	if c.n--; c.n == 0 {
		close(c.idle)
		c.idle = nil
	}
	c.mu.Unlock()
}

// wait returns nil once no call is running, or ctx's error if it ends
// first.
func (c *calls) wait(ctx context.Context) error {
	c.mu.Lock()
	idle := c.idle
	c.mu.Unlock()
	if idle == nil {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// errLater is what a release round's call returns for a node it leaves to
// an earlier call still running there (see attempt): it counts as pending.
var errLater = errors.New("released when the earlier call ends")

// isTimeout reports whether err is a context deadline, the per-node
// timeout, or a network timeout.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, errNodeTimeout) || errors.As(err, &ne) && ne.Timeout()
}
