package redlock

import (
	"context"
	"errors"
	"fmt"
	"net"
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

// result is what the nodes answered in one round.
type result struct {
	ok     int     // nodes that answered yes (SET done, token deleted or extended)
	failed []error // one *NodeError per node that failed or did not answer in time
}

// fanOut runs call on every node at once, each in its own goroutine with a
// context bounded by the per-node timeout, and returns when every node has
// answered or the timeout (or ctx) has ended, whichever comes first. A node
// that has not answered by then counts as failed.
//
// fanOut does not wait for such a node: the timeout holds even for a client
// that ignores context deadlines (go-redis with ContextTimeoutEnabled
// false), whose call stays blocked on the socket. Its goroutine exits when
// the call returns: at the client's own ReadTimeout or WriteTimeout, when
// the node answers, or when the client is closed, whichever comes first. It
// writes to a buffered channel, so it never blocks on a round that has
// moved on, and it touches no state of the Mutex.
func (m *Mutex) fanOut(parent context.Context, call func(context.Context, Client) (bool, error)) result {
	d := m.opts.nodeTimeout
	timedOut := fmt.Errorf("%w (%v)", errNodeTimeout, d)
	ctx, cancel := context.WithTimeoutCause(parent, d, timedOut)
	defer cancel()

	type reply struct {
		i   int
		ok  bool
		err error
	}
	replies := make(chan reply, len(m.clients)) // room for every reply: no sender blocks
	for i, c := range m.clients {
		go func() {
			ok, err := call(ctx, c)
			replies <- reply{i, ok, err}
		}()
	}

	answered := make([]bool, len(m.clients))
	errs := make([]error, len(m.clients))
	var res result
	record := func(r reply) {
		answered[r.i] = true
		if r.err != nil {
			if parent.Err() == nil && isTimeout(r.err) {
				// A client that honours deadlines gives up with its own
				// error as the per-node timeout fires; say which it was.
				r.err = fmt.Errorf("%w: %w", timedOut, r.err)
			}
			errs[r.i] = r.err
		} else if r.ok {
			res.ok++
		}
	}
wait:
	for range m.clients {
		select {
		case r := <-replies:
			record(r)
		case <-ctx.Done():
			break wait
		}
	}
	// Replies already in when time ran out still count.
	for drained := false; !drained; {
		select {
		case r := <-replies:
			record(r)
		default:
			drained = true
		}
	}
	for i, err := range errs {
		if !answered[i] {
			err = context.Cause(ctx)
		}
		if err != nil {
			res.failed = append(res.failed, &NodeError{Index: i, Addr: m.addrs[i], Err: err})
		}
	}
	return res
}

// isTimeout reports whether err is a context deadline or a network
// timeout, as a client that honours context deadlines returns.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}
