package contract_test

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/locklab/locklab/internal/faultproxy"
)

// The lost batch (issue 38). On the AutoPipeliner, many goroutines' lock
// commands share one pipelined batch. The proxy (faultproxy.DropBatch)
// delivers a batch, lets Redis run every command in it, and drops the
// connection before any reply comes back; the AutoPipeliner, on go-redis's
// default options, sends the whole batch again: SETs, acquires, releases,
// hand-offs of many locks, each run twice at once. Judged on the effect:
//   - unsafe: two parties inside one key's critical section at once;
//   - stuck: a Lock that does not get a lock whose holders all unlocked
//     (a key orphaned until its TTL, which is far longer than opTimeout);
//   - a release reported failed: an Unlock that returned an error although
//     its party held the lock (a release sent twice must answer as the
//     first run did);
//   - keys left behind (newKey's clean-up check).
// Every kind must show none of them.

const (
	lostBatchPairs  = 12 // keys; two parties contend for each
	lostBatchRounds = 4  // Lock, enter, leave, Unlock: per party
	lostBatchDrops  = 4  // batches lost in a run
	lostBatchEvery  = 25 // one batch in every this many matching commands
)

func TestLostBatch(t *testing.T) {
	forKinds(t, pipelinedKind, func(t *testing.T, k kind) {
		for _, f := range lostBatch(t, k, k.make) {
			t.Errorf("%s: %s", k.name, f)
		}
	})
}

// lostBatch runs the scene on kind k, each party's lock made by mk, and
// returns what went wrong, one sentence each.
func lostBatch(t *testing.T, k kind, mk func(*testing.T, env) locker) []string {
	t.Helper()
	k.make = mk
	ps := proxiesFor(t, k)
	clients := partyClients(t, k, user, ps) // one process: one AutoPipeliner per node
	var n any
	if k.notifier != nil {
		n = k.notifier(t, clients)
	}
	type pair struct {
		key     string
		parties [2]*party
		inside  atomic.Int32
	}
	pairs := make([]*pair, lostBatchPairs)
	for i := range pairs {
		var key string
		if k.errNotHeld != nil {
			key = newKey(t, k) // checks that no key is left
		} else { // the naive control leaves keys: deleted, unchecked
			key = fmt.Sprintf("contract:%s:%d", k.name, keySeq.Add(1))
			t.Cleanup(func() { cleanUp(t, k, key) })
		}
		p := &pair{key: key}
		for j := range p.parties {
			p.parties[j] = partyOn(t, k, fmt.Sprintf("%c%d", 'A'+j, i), key, longTTL, clients, n)
		}
		settleAtEnd(t, p.parties[:]...)
		warm(t, k, p.parties[0].lock) // preflight remembered, scripts loaded
		pairs[i] = p
	}

	rule := ps[0].DropBatch(faultproxy.Match{}, lostBatchDrops).Every(lostBatchEvery)
	var (
		mu       sync.Mutex
		failures []string
		unsafe   atomic.Int32
		wg       sync.WaitGroup
		start    = make(chan struct{})
	)
	fail := func(format string, a ...any) {
		mu.Lock()
		failures = append(failures, fmt.Sprintf(format, a...))
		mu.Unlock()
	}
	ctx := t.Context()
	for _, p := range pairs {
		for _, pt := range p.parties {
			wg.Go(func() {
				<-start
				for r := range lostBatchRounds {
					if err := pt.lock.Lock(op(ctx)); err != nil {
						fail("%s's Lock %d on %s = %v; want nil (stuck: a key orphaned?)", pt.name, r, p.key, err)
						return
					}
					if p.inside.Add(1) > 1 {
						unsafe.Add(1)
						fail("%s's Lock %d on %s returned while the other party held it: two holders", pt.name, r, p.key)
					}
					runtime.Gosched()
					p.inside.Add(-1)
					if err := pt.lock.Unlock(op(ctx)); err != nil {
						fail("%s's Unlock %d on %s = %v; want nil (a release sent twice answers as the first)", pt.name, r, p.key, err)
						return
					}
				}
			})
		}
	}
	close(start)
	wg.Wait()
	caught := rule.Caught()
	keys := map[string]bool{}
	for _, c := range caught {
		keys[c] = true
	}
	if len(keys) < 2 {
		t.Fatalf("%s: the lost batches held %v, not several locks' commands: harness went blind", k.name, caught)
	}
	t.Logf("%s: %d commands sent twice in the lost batches, %d unsafe, %d failures: %v", k.name, len(caught), unsafe.Load(), len(failures), caught)
	return failures
}
