package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/locklab/locklab/bench/registry"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/locklab/locklab/internal/rig"
)

// The fault scoreboard (-scenarios faults, make faults) runs every lock
// under the same fault schedules, a fixed number of seeded runs each, and
// judges each run on its effect on a protected resource (package judge).
//
// One run is one lock under one schedule: A takes the lock and starts its
// work on the resource, the fault hits, B and C want the lock meanwhile,
// and A finishes its work once the fault is over (or aborts it, if its lock
// says it is lost). One event is one seeded instance of a schedule: the
// same fault, at the same moment, for every lock at once, each on its own
// key, resource and clients, so every lock meets the same faults and a
// server-wide fault (a failover, a restart, memory pressure) is paid once.

// scFaults is the -scenarios name of the fault scoreboard.
const scFaults = "faults"

// Defaults of the scoreboard.
const (
	defaultFaultRuns = 20
	// userTimeout is the clients' dial, read and write timeout: the
	// libraries' defaults (3-5s) scaled down with the scoreboard's leases.
	userTimeout = 300 * time.Millisecond
	// holdB is how long B and C keep the lock after writing: the window in
	// which A's late commands land on the next holder.
	holdB = 150 * time.Millisecond
	// window is how long A's fault lasts at most once B and C want the
	// lock, when no B gets in: long enough for any poller (redsync retries
	// every 50-250ms) to get a lock that is free. A schedule may set a
	// longer one.
	window = 1500 * time.Millisecond
	// eventTimeout bounds one event.
	eventTimeout = 90 * time.Second
)

// resolveFaultImpls returns the scoreboard's locks: those named in -impls
// (globs allowed), or by default every lock the bench knows, the naive
// ones last as the control rows. The floors (raw) are not locks to judge.
func resolveFaultImpls(list []string) ([]*registry.Lock, error) {
	if len(list) == 0 {
		var names []string
		for n, im := range registry.Locks {
			if im.NoFaults == "" {
				names = append(names, n)
			}
		}
		list = registry.Sorted(names)
	}
	ims, err := registry.Resolve(list)
	if err != nil {
		return nil, err
	}
	var out []*registry.Lock
	for _, im := range ims {
		if im.Kind != registry.Floor {
			out = append(out, im)
		}
	}
	// The naive locks last, after the locks on other systems too.
	slices.SortStableFunc(out, func(a, b *registry.Lock) int {
		switch {
		case a.Naive == b.Naive:
			return 0
		case b.Naive:
			return -1
		}
		return 1
	})
	if len(out) == 0 {
		return nil, errors.New("-impls: no lock to run under faults (the raw floors are not judged)")
	}
	return out, nil
}

// faultSetup is what the scoreboard runs with.
type faultSetup struct {
	runs      int
	seed      uint64
	schedules []*schedule
	impls     []*registry.Lock
	srv       *servers // lock servers 0-4 and the resource server 5
	external  bool
	// allTimelines keeps every run's timeline, not only each cell's first
	// run and its first unsafe and stuck ones.
	allTimelines bool

	// Every lock's commands, for schedules 2 and 3 (faults_cmd.go).
	opsOnce sync.Once
	ops     map[string][]faultOp
	opsErr  error
}

// Server roles in the scoreboard's servers.
const (
	faultLockServers = 5
	faultResource    = 5 // index of the resource server
	faultServers     = 6
)

// runFaults runs every selected schedule and returns the results.
func runFaults(ctx context.Context, fs *faultSetup, progress io.Writer) ([]*cellResult, error) {
	var out []*cellResult
	for _, sch := range fs.schedules {
		cells := map[string]*cellResult{}
		var impls []*registry.Lock
		for _, im := range fs.impls {
			c := &cellResult{impl: im, sch: sch, all: fs.allTimelines}
			cells[im.Name] = c
			out = append(out, c)
			if why := sch.whyNot(im); why != "" {
				c.notRun = why
				fmt.Fprintf(progress, "faults: %d. %s: %s not run: %s\n", sch.n, sch.title, im.Name, why)
			} else if sch.appliesTo(im) {
				impls = append(impls, im)
			} else {
				c.notRun = notApplicable
			}
		}
		if len(impls) == 0 {
			fmt.Fprintf(progress, "faults: %d. %s: not run: it applies to none of the locks selected\n", sch.n, sch.title)
			continue
		}
		if why := fs.skip(sch); why != "" {
			for _, c := range cells {
				if c.notRun == "" {
					c.notRun = why
				}
			}
			fmt.Fprintf(progress, "faults: %d. %s: not run: %s\n", sch.n, sch.title, why)
			continue
		}
		start := time.Now()
		if sch.commandFault && fs.ops == nil {
			// Every lock's commands are found once, for both schedules.
			if _, err := fs.lockOps(ctx); err != nil {
				return nil, err
			}
			fmt.Fprintf(progress, "faults: found the commands of %d locks in %s\n", len(fs.impls), time.Since(start).Round(100*time.Millisecond))
		}
		var mu sync.Mutex
		var firstErr error
		sem := make(chan struct{}, max(sch.parallel, 1))
		var wg sync.WaitGroup
		runs := fs.runs
		if sch.runs > 0 {
			runs = min(runs, sch.runs)
		}
		for i := range runs {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				rs, err := fs.event(ctx, sch, impls, i)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					if firstErr == nil {
						firstErr = err
					}
					fmt.Fprintf(progress, "faults: %d. %s run %d: %v\n", sch.n, sch.title, i+1, err)
				}
				for _, r := range rs {
					cells[r.im.Name].add(r)
				}
			})
			if ctx.Err() != nil {
				break
			}
		}
		wg.Wait()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		fmt.Fprintf(progress, "faults: %d. %s: %d runs of %d locks in %s\n", sch.n, sch.title, runs, len(impls),
			time.Since(start).Round(100*time.Millisecond))
		_ = firstErr // per-run errors are in the cells as inconclusive runs
	}
	return out, nil
}

// skip says why a schedule cannot run here, or "".
func (fs *faultSetup) skip(sch *schedule) string {
	if sch.needsRig != "" && (fs.external || !rig.HasControl()) {
		return sch.needsRig
	}
	return ""
}

// event runs one event of sch and returns its runs, judged.
func (fs *faultSetup) event(ctx context.Context, sch *schedule, impls []*registry.Lock, i int) ([]*faultRun, error) {
	ctx, cancel := context.WithTimeout(ctx, eventTimeout)
	defer cancel()
	seed := fs.seed*1000 + uint64(sch.n)*100 + uint64(i)
	ev := &event{ctx: ctx, setup: fs, sch: sch, index: i, seed: seed,
		rng:       rand.New(rand.NewPCG(seed, 0x10c61ab)),
		tag:       fmt.Sprintf("%sfaults:%s:%s:%d", keyRoot, randomID(), sch.id, i),
		lockAddrs: fs.srv.addrs[:faultLockServers],
		users:     &registry.UserClients{Timeout: userTimeout},
	}
	defer ev.close()
	for _, im := range impls {
		k := ev.tag + ":" + im.Name
		ev.runs = append(ev.runs, &faultRun{ev: ev, im: im, key: k + ":lock", res: k + ":res"})
	}
	err := sch.run(ev)
	if err == nil && ctx.Err() != nil {
		err = fmt.Errorf("event did not finish within %v", eventTimeout)
	}
	if err != nil {
		for _, r := range ev.runs {
			if r.failed == "" {
				r.failed = longErr(err)
			}
		}
		return ev.runs, err
	}
	ev.judgeAll()
	return ev.runs, nil
}
