package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/locklab/locklab/bench/env"
	"github.com/locklab/locklab/bench/registry"
	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/internal/history"
)

// Schedule 14, the lost batch (issue 38). go-redis's AutoPipeliner
// (client.AutoPipeline()) sends the commands of every goroutine that shares
// it in batches, one pipeline each; a batch that fails on a network error
// is sent again whole, on go-redis's default options, so every command in
// it runs twice, each beside the other goroutines' commands of that batch.
// Here A, B and C are goroutines of one process sharing one AutoPipeliner
// per lock server (registry.Env.Pipeliners), each with its own lock (its
// own Notifier, reentrant owner, token): the proxy in front of each server
// lets a batch through, the server runs it, and the proxy closes the
// connection before any reply comes back (faultproxy.DropBatch).

const batchLostWhat = "A, B and C are goroutines of one process sharing one go-redis AutoPipeliner per lock server (client.AutoPipeline(), go-redis's default options), each with its own lock, and take the lock one after the other, again and again, each pausing 0-150 ms between its turns. " +
	"The proxy in front of each server lets a whole batch through after a seeded number of commands, the server runs it, and the proxy closes the connection before any reply: the AutoPipeliner sends the batch again, so every command in it (the three clients' acquires, releases and hand-offs) runs twice. " +
	"Batches are lost until 3 of two or more commands were (at most 12 in a run); the proxies add 20 ms each way so that each reads a batch whole. " +
	"A lock whose API takes no AutoPipeliner is not run, and its cell says why."

const (
	// batchLatency is the proxies' delay each way, as in lab 12: the
	// proxy's batch ends at the first reply, so without it Redis can
	// answer a batch's first command before the proxy has read the rest.
	batchLatency = 20 * time.Millisecond
	// batchWanted: a run loses batches until this many held two commands
	// or more (a batch of one is schedule 2's lost reply)...
	batchWanted = 3
	// batchMaxLost: ...or until it has lost this many.
	batchMaxLost = 12
	// batchSkip bounds the seeded number of commands let through before
	// each loss.
	batchSkip = 15
	// batchAfter: the clients keep taking turns this long after the last
	// lost batch, so that a key it orphaned shows as a stall.
	batchAfter = 2 * time.Second
	// batchThink bounds the seeded pause of a client between its turns:
	// without it, a lock whose waiters wait without sending (a Notifier)
	// has one client's command in flight at a time, and every batch is
	// one command; with it, a client's new Lock can share a batch with
	// another's Unlock.
	batchThink = 150 * time.Millisecond
)

// noPipeliner is schedule 14's notFor: why the lock's API takes no
// AutoPipeliner (registry.Lock.NoPipeliner), or "".
func noPipeliner(im *registry.Lock) string { return im.NoPipeliner }

// whyNot says why s cannot run im although it applies to it (notFor), or
// "" (it runs im, or does not apply to it).
func (s *Schedule) whyNot(im *registry.Lock) string {
	if s.notFor == nil || !s.AppliesTo(im) {
		return ""
	}
	return s.notFor(im)
}

// runBatchLost: schedule 14.
func runBatchLost(ev *Event) error {
	nets := map[*FaultRun][]*faultproxy.Proxy{}
	for _, r := range ev.runs {
		ps, err := ev.sharePipeliners(r)
		if err != nil {
			return err
		}
		nets[r] = ps
	}
	// The same losses, at the same counts of commands, for every lock.
	skips := make([]int, batchMaxLost)
	for i := range skips {
		skips[i] = ev.rng.IntN(batchSkip)
	}
	if err := ev.start(); err != nil {
		return err
	}
	ev.each(func(r *FaultRun) { r.loseBatches(nets[r], skips, ev.seed) })
	return nil
}

// sharePipeliners gives r's clients the connections of one process: for
// each of the lock's servers, a proxy, a go-redis client through it as
// users run it, and that client's AutoPipeliner, which A, B and C share.
func (ev *Event) sharePipeliners(r *FaultRun) ([]*faultproxy.Proxy, error) {
	var ps []*faultproxy.Proxy
	for i, addr := range ev.lockAddrs[:r.Im.Nodes] {
		p, err := ev.proxy(addr)
		if err != nil {
			return nil, err
		}
		p.SetLatency(batchLatency)
		c := ev.users.Client(i, p.Addr())
		ap, err := c.AutoPipeline()
		if err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("%s: AutoPipeline on server %d: %w", r.Im.Name, i, err)
		}
		ev.onClose(func() { _ = ap.Close(); _ = c.Close() })
		ps = append(ps, p)
		r.pipeliners = append(r.pipeliners, ap)
	}
	return ps, nil
}

// loseBatches is one run of schedule 14: A, B and C take turns (the
// script of schedule 2, with a seeded pause of up to batchThink between a
// client's turns) while the proxies lose batches one at a time, the i-th
// after skips[i] commands, until batchWanted batches of two commands or
// more were lost, and for batchAfter more.
func (r *FaultRun) loseBatches(ps []*faultproxy.Proxy, skips []int, seed uint64) {
	r.fault("armed: the proxies will lose batches of the AutoPipeliner that A, B and C share, one at a time (the server runs a batch; the connection closes before any reply; the AutoPipeliner sends it again)")
	var (
		mu          sync.Mutex
		lost, multi int
		done        bool
		last        time.Time
	)
	rng := rand.New(rand.NewPCG(seed, 0xba7c4))
	more := func() bool {
		mu.Lock()
		think := time.Duration(rng.Int64N(int64(batchThink)))
		mu.Unlock()
		if !env.SleepCtx(r.Ev.ctx, think) {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		return !done || time.Since(last) < batchAfter
	}
	ctx, stop := context.WithCancel(r.Ev.ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer func() {
			mu.Lock()
			if !done {
				done, last = true, time.Now()
			}
			mu.Unlock()
		}()
		for _, skip := range skips {
			sizes, ok := r.loseBatch(ctx, ps, skip)
			if !ok {
				return
			}
			mu.Lock()
			for _, n := range sizes {
				lost++
				if n > 1 {
					multi++
				}
			}
			if multi >= batchWanted {
				done, last = true, time.Now()
			}
			d := done
			mu.Unlock()
			if d {
				return
			}
		}
	})
	r.cycleAll(4*r.Ev.Sch.TTL+2*time.Second, more)
	stop()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	switch {
	case lost == 0:
		r.failed = "no batch was lost: the lock sent fewer commands than the proxy let through first"
	case multi == 0:
		r.fault("(%d batches lost, each of one command: a lost reply, as in schedule 2)", lost)
	default:
		r.fault("(%d batches lost, %d of them of two commands or more)", lost, multi)
	}
}

// loseBatch arms every proxy to lose the batch that starts after skip
// more commands, waits for one to be lost (or ctx to end: ok false),
// records what each lost on the timeline and disarms them all. It returns
// how many commands each lost batch held.
func (r *FaultRun) loseBatch(ctx context.Context, ps []*faultproxy.Proxy, skip int) (sizes []int, ok bool) {
	rules := make([]*faultproxy.Rule, len(ps))
	for i, p := range ps {
		rules[i] = p.DropBatch(faultproxy.Match{}, 1).After(skip)
	}
	defer func() {
		for _, rule := range rules {
			rule.Remove()
		}
	}()
	var at time.Duration
	for at == 0 {
		for _, rule := range rules {
			if rule.Hits() > 0 {
				at = r.Ev.clock.Now()
			}
		}
		if at == 0 && !env.SleepCtx(ctx, 2*time.Millisecond) {
			return nil, false
		}
	}
	// A batch is in the proxy whole before its first reply comes back,
	// 2*batchLatency after its first command; the other servers' batches
	// of the same commands are lost within that time too.
	if !env.SleepCtx(ctx, 3*batchLatency) {
		return nil, false
	}
	for i, rule := range rules {
		caught := rule.Caught()
		if len(caught) == 0 {
			continue
		}
		on := ""
		if len(ps) > 1 {
			on = fmt.Sprintf(" on server %d", i)
		}
		r.hist.Add(history.Event{Kind: history.Fault, At: at, Text: fmt.Sprintf(
			"batch of %d lost%s (%s): the server ran it, the connection closed before any reply; the AutoPipeliner sends it again",
			len(caught), on, strings.ReplaceAll(strings.Join(caught, ", "), r.key, "key"))})
		sizes = append(sizes, len(caught))
	}
	return sizes, true
}
