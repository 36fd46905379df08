package etcdlock

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// waitTurn waits until every claim older than h's is gone, then checks
// that h's own claim is still there. It watches one claim at a time: the
// newest one older than h's, which is the claim just ahead in line, so a
// release wakes one waiter and not all of them (no thundering herd). Claims
// cannot be created with an older revision later: revisions only grow.
//
// The wait ends early when h's lease ends (its claim is gone then, and
// waiting on would only hand the lock to nobody) or ctx ends.
func (m *Mutex) waitTurn(ctx context.Context, h *hold) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-h.keep.done:
			cancel()
		case <-stop:
		}
	}()

	older := append(clientv3.WithLastCreate(), clientv3.WithRange(m.lineEnd()), clientv3.WithMaxCreateRev(h.rev-1))
	for {
		resp, err := m.client.Get(ctx, m.prefix, older...)
		if err != nil {
			return m.waitErr(h, fmt.Errorf("etcdlock: wait for %q: %w", m.key, err))
		}
		if len(resp.Kvs) == 0 {
			break
		}
		ahead := string(resp.Kvs[0].Key)
		err = m.waitDelete(ctx, ahead, resp.Header.Revision)
		if errors.Is(err, rpctypes.ErrCompacted) {
			// The watch started, or resumed after a reconnect, at a
			// revision etcd has compacted away: the deletion may be among
			// the lost history. Read the line again (it is current) and
			// watch from there; the place in line is the claim's revision,
			// which a compaction does not touch.
			continue
		}
		if err != nil {
			return m.waitErr(h, err)
		}
	}
	resp, err := m.client.Get(ctx, h.claim)
	if err != nil {
		return m.waitErr(h, fmt.Errorf("etcdlock: check claim %q: %w", h.claim, err))
	}
	if len(resp.Kvs) == 0 {
		return fmt.Errorf("etcdlock: lock %q: %w: the claim's lease ended while it waited", m.key, ErrSessionLost)
	}
	return nil
}

// waitDelete watches key from revision rev (the revision at which it was
// seen) until it is deleted. It returns an error wrapping
// rpctypes.ErrCompacted if etcd no longer has the history from rev.
func (m *Mutex) waitDelete(ctx context.Context, key string, rev int64) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var last clientv3.WatchResponse
	for wr := range m.client.Watch(ctx, key, clientv3.WithRev(rev)) {
		for _, ev := range wr.Events {
			if ev.Type == mvccpb.DELETE {
				return nil
			}
		}
		last = wr
	}
	if last.CompactRevision != 0 {
		return fmt.Errorf("etcdlock: watch %q from revision %d: %w (compacted up to %d)", key, rev, rpctypes.ErrCompacted, last.CompactRevision)
	}
	if err := last.Err(); err != nil {
		return fmt.Errorf("etcdlock: watch %q: %w", key, err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return fmt.Errorf("etcdlock: watch %q ended", key)
}

// waitErr names why a wait ended: the lease (ErrSessionLost), or err.
func (m *Mutex) waitErr(h *hold, err error) error {
	select {
	case <-h.keep.done:
		return fmt.Errorf("etcdlock: lock %q: %w: the lease's keep-alive ended while it waited", m.key, ErrSessionLost)
	default:
		return err
	}
}
