package etcdlock

import (
	"context"
	"errors"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/locklab/locklab/internal/retry"
)

// doneMargin returns how long before the earliest moment etcd can end a
// lease of ttl a keeper closes Done: a tenth of the TTL (1s of the default
// 10s, 100ms of a 1s TTL). It covers the difference in rate between this
// process's clock and etcd's, and a timer that fires late in a busy
// process; it does not cover a process paused past it (nothing can).
func doneMargin(ttl time.Duration) time.Duration { return ttl / 10 }

// A keeper keeps the lease of one hold alive and closes done when it can
// no longer promise that etcd still has it: at the latest doneMargin
// before the earliest moment etcd may end the lease, before any other
// client can get the lock.
//
// The keeper renews the lease itself, one KeepAliveOnce every TTL/3,
// rather than through clientv3's KeepAlive stream, because what it counts
// from is the send time of the renewal that was answered. etcd restarts a
// lease's countdown when the renewal reaches its leader; the answer comes
// back a reply's latency later. clientv3's lessor (and so a
// concurrency.Session) restarts its countdown when the answer arrives,
// so its Done came a reply's latency after etcd ended the lease: with
// slow replies, another client held the lock before the old holder's Done
// closed (issue 34). A renewal sent at s and answered with
// TTL t means etcd keeps the lease at least until s+t, since etcd got the
// renewal after s; the keeper's deadline is s+t-doneMargin(t). A renewal
// that never returns changes nothing: the deadline stands.
//
// The keeper also does not have the Session's other limit: clientv3 waits
// for the answer to a new lease's first keep-alive only for DialTimeout
// plus 1s, then stops keeping it alive although the lease lives for its
// whole TTL (a leader that stalls right after Lock cost the holder its
// lock, lab 13). A keeper asks again until its own deadline.
type keeper struct {
	done   chan struct{} // closed when the lease is presumed lost or stop was called
	cancel context.CancelFunc
	exited chan struct{} // closed when run has returned
}

// keep starts keeping lease id alive. sent is when the grant (or the last
// renewal) that answered with ttl was sent; the hold ends too when parent
// ends (a shared session's Ctx, which ends with the session).
func keep(parent context.Context, c *clientv3.Client, id clientv3.LeaseID, ttl time.Duration, sent time.Time) *keeper {
	ctx, cancel := context.WithCancel(parent)
	k := &keeper{done: make(chan struct{}), cancel: cancel, exited: make(chan struct{})}
	go k.run(ctx, c, id, ttl, sent)
	return k
}

// stop stops renewing the lease, closes done, and returns once the keeper's
// goroutine has.
func (k *keeper) stop() {
	k.cancel()
	<-k.exited
}

// run renews the lease every TTL/3, counting from the send time of the
// last renewal answered, until ctx ends, etcd says the lease is gone, or
// no renewal is answered before the deadline; then it closes done.
func (k *keeper) run(ctx context.Context, c *clientv3.Client, id clientv3.LeaseID, ttl time.Duration, sent time.Time) {
	defer close(k.exited)
	defer close(k.done)
	defer k.cancel()
	deadline := sent.Add(ttl - doneMargin(ttl))
	expired := time.NewTimer(time.Until(deadline))
	defer expired.Stop()
	next := time.NewTimer(time.Until(sent.Add(ttl / 3)))
	defer next.Stop()
	for {
		select {
		case <-next.C:
		case <-expired.C:
			return
		case <-ctx.Done():
			return
		}
		at, granted, err := renew(ctx, c, id, ttl, deadline)
		if err != nil {
			return // stopped, the session ended, the client closed, the lease is gone, or no answer in time
		}
		ttl = granted
		deadline = at.Add(ttl - doneMargin(ttl))
		expired.Reset(time.Until(deadline))
		next.Reset(time.Until(at.Add(ttl / 3)))
	}
}

// renew sends renewals of lease id until one is answered, and returns
// when that one was sent and the TTL etcd answered with. An attempt that
// gets no answer within ttl/3 is given up and sent again at once (a
// renewal forwarded by a follower to a leader just killed can hang for
// etcd's request timeout, 7s); one that etcd refuses otherwise is sent
// again after gonePoll. It gives up with an error when etcd says the lease
// is gone, the client is closed, ctx ends, or deadline passes.
func renew(ctx context.Context, c *clientv3.Client, id clientv3.LeaseID, ttl time.Duration, deadline time.Time) (at time.Time, granted time.Duration, err error) {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	pause := time.Duration(0) // after the attempt that just failed
	err = retry.Repeat(ctx, retry.Policy{Delay: func(int) time.Duration { return pause }}, func(ctx context.Context, _ int) (bool, error) {
		at = time.Now()
		actx, cancel := context.WithTimeout(ctx, ttl/3)
		resp, err := c.KeepAliveOnce(actx, id)
		cancel()
		switch {
		case err == nil:
			granted = time.Duration(resp.TTL) * time.Second
			return true, nil
		case errors.Is(err, rpctypes.ErrLeaseNotFound), c.Ctx().Err() != nil:
			return false, err // etcd says the lease is gone, or the client closed
		case errors.Is(actx.Err(), context.DeadlineExceeded):
			pause = 0 // this attempt went unanswered: send another
		default:
			pause = gonePoll // refused otherwise: again shortly, within the deadline
		}
		return false, nil
	})
	return at, granted, err
}

// gonePoll is how soon a keeper asks again after a renewal failed for a
// reason other than its deadline.
const gonePoll = 500 * time.Millisecond
