package faults

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/locklab/locklab/bench/env"
	"github.com/locklab/locklab/bench/registry"
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

// ScFaults is the -scenarios name of the fault scoreboard.
const ScFaults = "faults"

// Defaults of the scoreboard.
const (
	DefaultFaultRuns = 20
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

// ResolveFaultImpls returns the scoreboard's locks: those named in -impls
// (globs allowed), or by default every lock the bench knows, the naive
// ones last as the control rows. The floors (raw) are not locks to judge.
func ResolveFaultImpls(list []string) ([]*registry.Lock, error) {
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

// FaultSetup is what the scoreboard runs with.
type FaultSetup struct {
	Runs      int
	Seed      uint64
	Schedules []*Schedule
	Impls     []*registry.Lock
	Srv       *env.Servers // lock servers 0-4 and the resource server 5
	External  bool
	// AllTimelines keeps every run's timeline, not only each cell's first
	// run and its first unsafe and stuck ones.
	AllTimelines bool

	// Every lock's commands, for schedules 2 and 3 (cmd.go).
	opsOnce sync.Once
	Ops     map[string][]faultOp
	opsErr  error
}

// Server roles in the scoreboard's servers.
const (
	faultLockServers = 5
	faultResource    = 5 // index of the resource server
	FaultServers     = 6
)

// RunFaults runs every selected schedule and returns the results.
func RunFaults(ctx context.Context, fs *FaultSetup, progress io.Writer) ([]*CellResult, error) {
	var out []*CellResult
	for _, sch := range fs.Schedules {
		cells := map[string]*CellResult{}
		var impls []*registry.Lock
		for _, im := range fs.Impls {
			c := &CellResult{Impl: im, Sch: sch, all: fs.AllTimelines}
			cells[im.Name] = c
			out = append(out, c)
			if why := sch.whyNot(im); why != "" {
				c.NotRun = why
				fmt.Fprintf(progress, "faults: %d. %s: %s not run: %s\n", sch.N, sch.Title, im.Name, why)
			} else if sch.AppliesTo(im) {
				impls = append(impls, im)
			} else {
				c.NotRun = NotApplicable
			}
		}
		if len(impls) == 0 {
			fmt.Fprintf(progress, "faults: %d. %s: not run: it applies to none of the locks selected\n", sch.N, sch.Title)
			continue
		}
		if why := fs.Skip(sch); why != "" {
			for _, c := range cells {
				if c.NotRun == "" {
					c.NotRun = why
				}
			}
			fmt.Fprintf(progress, "faults: %d. %s: not run: %s\n", sch.N, sch.Title, why)
			continue
		}
		start := time.Now()
		if sch.commandFault && fs.Ops == nil {
			// Every lock's commands are found once, for both schedules.
			if _, err := fs.lockOps(ctx); err != nil {
				return nil, err
			}
			fmt.Fprintf(progress, "faults: found the commands of %d locks in %s\n", len(fs.Impls), time.Since(start).Round(100*time.Millisecond))
		}
		var mu sync.Mutex
		var firstErr error
		sem := make(chan struct{}, max(sch.parallel, 1))
		var wg sync.WaitGroup
		runs := fs.Runs
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
					fmt.Fprintf(progress, "faults: %d. %s run %d: %v\n", sch.N, sch.Title, i+1, err)
				}
				for _, r := range rs {
					cells[r.Im.Name].add(r)
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
		fmt.Fprintf(progress, "faults: %d. %s: %d runs of %d locks in %s\n", sch.N, sch.Title, runs, len(impls),
			time.Since(start).Round(100*time.Millisecond))
		_ = firstErr // per-run errors are in the cells as inconclusive runs
	}
	return out, nil
}

// Skip says why a schedule cannot run here, or "".
func (fs *FaultSetup) Skip(sch *Schedule) string {
	if sch.needsRig != "" && (fs.External || !rig.HasControl()) {
		return sch.needsRig
	}
	return ""
}

// event runs one event of sch and returns its runs, judged.
func (fs *FaultSetup) event(ctx context.Context, sch *Schedule, impls []*registry.Lock, i int) ([]*FaultRun, error) {
	ctx, cancel := context.WithTimeout(ctx, eventTimeout)
	defer cancel()
	seed := fs.Seed*1000 + uint64(sch.N)*100 + uint64(i)
	ev := &Event{ctx: ctx, setup: fs, Sch: sch, index: i, seed: seed,
		rng:       rand.New(rand.NewPCG(seed, 0x10c61ab)),
		tag:       fmt.Sprintf("%sfaults:%s:%s:%d", env.KeyRoot, env.RandomID(), sch.ID, i),
		lockAddrs: fs.Srv.Addrs[:faultLockServers],
		users:     &registry.UserClients{Timeout: userTimeout},
	}
	defer ev.Close()
	for _, im := range impls {
		k := ev.tag + ":" + im.Name
		ev.runs = append(ev.runs, &FaultRun{Ev: ev, Im: im, key: k + ":lock", res: k + ":res"})
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
