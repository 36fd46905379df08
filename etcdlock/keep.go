package etcdlock

import (
	"context"
	"errors"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// gonePoll bounds the question a keeper asks etcd when clientv3 stops
// keeping its lease alive early: is the lease gone, or only unanswered?
const gonePoll = time.Second

// A keeper keeps the lease of a hold with its own lease alive, as
// concurrency.Session does, and closes done when it can no longer: etcd
// says the lease is gone, no answer came for a whole TTL, or stop was
// called (Unlock).
//
// It differs from a Session in one way, which a failover shows: clientv3
// waits for the answer to a new lease's first keep-alive only for the
// client's DialTimeout plus 1s (its lessor's first-answer deadline), then
// stops keeping the lease alive, and a Session ends with it, although the
// lease, just granted, lives for its whole TTL. A leader that stalls right
// after Lock (SIGSTOP, a GC pause, an election) thus cost the holder its
// lock while etcd still kept it (lab 13's paused leader, seen 2 runs in
// 14 with a 2s DialTimeout). A keeper asks again, until etcd answers that
// the lease is gone or a whole TTL has passed since the last answer.
type keeper struct {
	done chan struct{}
	stop context.CancelFunc
}

// keep starts keeping lease id alive; granted is when the grant was sent,
// so the lease lives at least ttl from then.
func keep(c *clientv3.Client, id clientv3.LeaseID, ttl time.Duration, granted time.Time) (*keeper, error) {
	ctx, stop := context.WithCancel(context.Background())
	answers, err := c.KeepAlive(ctx, id)
	if err != nil {
		stop()
		return nil, err
	}
	k := &keeper{done: make(chan struct{}), stop: stop}
	go k.run(ctx, c, id, answers, granted.Add(ttl))
	return k, nil
}

func (k *keeper) run(ctx context.Context, c *clientv3.Client, id clientv3.LeaseID, answers <-chan *clientv3.LeaseKeepAliveResponse, deadline time.Time) {
	defer close(k.done)
	defer k.stop() // presumed lost: no more keep-alives
	// The deadline is the keeper's own, so Done closes a TTL after the last
	// answer whatever clientv3's lessor does meanwhile.
	expired := time.NewTimer(time.Until(deadline))
	defer expired.Stop()
	for {
		select {
		case a, ok := <-answers:
			if ok {
				expired.Reset(time.Duration(a.TTL) * time.Second)
				continue
			}
			// clientv3 stopped: stop was called, etcd said the lease is
			// gone, or its deadline for an answer passed. Ask again
			// unless the lease is gone.
			if ctx.Err() != nil || leaseGone(ctx, c, id) {
				return
			}
			var err error
			if answers, err = c.KeepAlive(ctx, id); err != nil {
				return // the client is closed
			}
		case <-expired.C:
			return // no answer for a whole TTL
		case <-ctx.Done():
			return
		}
	}
}

// leaseGone reports whether etcd says lease id has ended. No answer within
// gonePoll is not an ending.
func leaseGone(ctx context.Context, c *clientv3.Client, id clientv3.LeaseID) bool {
	ctx, cancel := context.WithTimeout(ctx, gonePoll)
	defer cancel()
	r, err := c.TimeToLive(ctx, id)
	return errors.Is(err, rpctypes.ErrLeaseNotFound) || err == nil && r.TTL <= 0
}
