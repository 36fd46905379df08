package etcdlock

import (
	"context"
	"errors"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
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
// renewal) that answered with ttl was sent; ended, if not nil, is a
// channel whose closing ends the hold too (a shared session's Done).
func keep(c *clientv3.Client, id clientv3.LeaseID, ttl time.Duration, sent time.Time, ended <-chan struct{}) *keeper {
	ctx, cancel := context.WithCancel(context.Background())
	k := &keeper{done: make(chan struct{}), cancel: cancel, exited: make(chan struct{})}
	go k.run(ctx, c, id, ttl, sent, ended)
	return k
}

// stop stops renewing the lease, closes done, and returns once the keeper's
// goroutine has.
func (k *keeper) stop() {
	k.cancel()
	<-k.exited
}

func (k *keeper) run(ctx context.Context, c *clientv3.Client, id clientv3.LeaseID, ttl time.Duration, sent time.Time, ended <-chan struct{}) {
	defer close(k.exited)
	defer close(k.done)
	defer k.cancel()
	deadline := sent.Add(ttl - doneMargin(ttl))
	expired := time.NewTimer(time.Until(deadline))
	defer expired.Stop()
	renew := time.NewTimer(time.Until(sent.Add(ttl / 3)))
	defer renew.Stop()
	for {
		select {
		case <-renew.C:
		case <-expired.C:
			return
		case <-ended:
			return
		case <-ctx.Done():
			return
		}
		// One renewal. An attempt that gets no answer within TTL/3 is
		// given up and sent again (a renewal forwarded by a follower to a
		// leader just killed can hang for etcd's request timeout, 7s),
		// until one is answered or the deadline passes; each attempt
		// counts from its own send time.
		at := time.Now()
		rctx, cancel := context.WithDeadline(ctx, minTime(deadline, at.Add(ttl/3)))
		resp, err := c.KeepAliveOnce(rctx, id)
		cancel()
		switch {
		case err == nil:
			ttl = time.Duration(resp.TTL) * time.Second
			deadline = at.Add(ttl - doneMargin(ttl))
			expired.Reset(time.Until(deadline))
			renew.Reset(time.Until(at.Add(ttl / 3)))
		case errors.Is(err, rpctypes.ErrLeaseNotFound):
			return // etcd says the lease is gone
		case ctx.Err() != nil || c.Ctx().Err() != nil || !time.Now().Before(deadline):
			return // stopped, the client closed, or no answer in time
		case errors.Is(rctx.Err(), context.DeadlineExceeded):
			renew.Reset(0) // this attempt went unanswered: send another
		default:
			// etcd refused it otherwise: try again shortly, within the
			// deadline.
			renew.Reset(gonePoll)
		}
	}
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// gonePoll is how soon a keeper asks again after a renewal failed for a
// reason other than its deadline.
const gonePoll = 500 * time.Millisecond
