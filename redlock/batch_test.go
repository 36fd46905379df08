package redlock_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/internal/rig"
	"github.com/locklab/locklab/redlock"
)

// behindPipeliners is behindProxies for the fault scoreboard's batch-lost
// schedule: each node behind a proxy adding latency each way, a go-redis
// client on its default options but for its 300 ms timeouts (as
// registry.UserClients makes them), and that client's AutoPipeliner.
func behindPipeliners(t *testing.T, addrs []string, latency time.Duration) ([]*faultproxy.Proxy, []redlock.Client) {
	t.Helper()
	ps := make([]*faultproxy.Proxy, len(addrs))
	cs := make([]redlock.Client, len(addrs))
	for i, a := range addrs {
		ps[i] = faultproxy.Start(t, a)
		ps[i].SetLatency(latency)
		o := rig.UserOptions(ps[i].Addr())
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout = 300*time.Millisecond, 300*time.Millisecond, 300*time.Millisecond
		c := redis.NewClient(o)
		ap, err := c.AutoPipeline()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ap.Close(); _ = c.Close() })
		cs[i] = ap
	}
	return ps, cs
}

// TestUnlockAfterBatchLostOnAutoPipeliners: as in the fault scoreboard's
// batch-lost schedule (redlock-5 and redlock-5-poll, a 3 s lease: a 150 ms
// per-node timeout; AutoPipeliners on go-redis's defaults, proxies adding
// 20 ms each way), the batch holding the release is lost on 3 or 5 of the
// 5 nodes, once or twice: each node ran it, and the proxy closed the
// connection before the reply, so the AutoPipeliner sent it again. In the
// slow cases those nodes' round trips also take longer than the per-node
// timeout (80 ms each way), as the AutoPipeliner's resend does when it
// dials again and backs off: it runs a queued command on its own context,
// so every round's call to them answers, but after its round gave up. The
// release took effect on every node, so Unlock must say nil, within the
// release timeout. (The slow cases said "3 of 5 nodes failed" and "5 of 5
// nodes failed, quorum 3: quorum unreachable", one "no reply within the
// per-node timeout (150ms)" per node, after 1.5 s and 2.1 s: the
// scoreboard's "unlock failed: ... 5 of ..." followed by "release took
// effect".)
func TestUnlockAfterBatchLostOnAutoPipeliners(t *testing.T) {
	for _, tc := range []struct {
		on, lost int
		slow     time.Duration
	}{{3, 1, 0}, {5, 2, 0}, {3, 1, 80 * time.Millisecond}, {5, 2, 80 * time.Millisecond}} {
		on, lost, slow := tc.on, tc.lost, tc.slow
		t.Run(fmt.Sprintf("%dnodes-lost%d-slow%v", on, lost, slow), func(t *testing.T) {
			ctx := t.Context()
			key := newKey(t)
			ps, cs := behindPipeliners(t, addrs[:5], 20*time.Millisecond)
			m := redlock.New(cs, key, redlock.WithTTL(3*time.Second))
			if err := m.Lock(ctx); err != nil {
				t.Fatalf("Lock = %v", err)
			}
			settle(t, m)
			release := redlock.Scripts["release"].Hash()
			var rules []*faultproxy.Rule
			for _, p := range ps[5-on:] {
				rules = append(rules, p.DropBatch(faultproxy.Match{Script: release, Key: key}, lost))
				if slow > 0 {
					p.SetLatency(slow)
				}
			}
			start := time.Now()
			err := m.Unlock(ctx)
			took := time.Since(start)
			settle(t, m)
			for i, r := range rules {
				if r.Hits() != lost {
					t.Fatalf("node %d's release batch was lost %d times; want %d", 5-on+i, r.Hits(), lost)
				}
			}
			if h := holders(t, admin[:5], key); h[0]+h[1]+h[2]+h[3]+h[4] != "" {
				t.Fatalf("after the releases ran, the nodes hold %q; want none", h)
			}
			if err != nil {
				t.Errorf("Unlock whose release ran everywhere, %d of 5 batches lost %d times = %v (after %v); want nil", on, lost, err, took.Round(time.Millisecond))
			}
			if limit := 3 * time.Second; took > limit {
				t.Errorf("Unlock took %v; want within the release timeout (2s) and a round, by %v", took.Round(time.Millisecond), limit)
			}
		})
	}
}

// TestUnlockOnAutoPipelinersRefusingNodes: on the same AutoPipeliners, 3
// of 5 nodes reset every connection. Their releases never answer, so
// Unlock must still say ErrQuorumUnreachable, naming them, by the release
// timeout and a round: waiting for late answers must not outlast it. (On
// an AutoPipeliner a refusing node looks busy: its calls, dialled again
// and backed off, outlive the per-node timeout; Unlock took 1.4-2.1 s
// before late answers were counted, and 2.0 s after.)
func TestUnlockOnAutoPipelinersRefusingNodes(t *testing.T) {
	ctx := t.Context()
	key := newKey(t)
	ps, cs := behindPipeliners(t, addrs[:5], 20*time.Millisecond)
	m := redlock.New(cs, key, redlock.WithTTL(3*time.Second))
	if err := m.Lock(ctx); err != nil {
		t.Fatalf("Lock = %v", err)
	}
	settle(t, m)
	for _, p := range ps[2:] {
		p.Reset()
	}
	start := time.Now()
	err := m.Unlock(ctx)
	took := time.Since(start)
	for _, p := range ps[2:] {
		p.Heal()
	}
	settle(t, m)
	if !errors.Is(err, redlock.ErrQuorumUnreachable) || len(nodeErrors(err)) != 3 {
		t.Fatalf("Unlock with 3 of 5 nodes refusing = %v; want ErrQuorumUnreachable naming 3 nodes", err)
	}
	if limit := 3 * time.Second; took > limit {
		t.Errorf("Unlock with 3 of 5 nodes refusing returned after %v (%v); want by %v", took.Round(time.Millisecond), err, limit)
	}
}
