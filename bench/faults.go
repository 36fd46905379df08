package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/locklab/locklab/internal/rig"
)

// The fault scoreboard (-scenarios faults, make faults) runs every lock
// under the same fault schedules, a fixed number of seeded runs each, and
// judges each run on its effect on a protected resource (faults_judge.go).
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

// schedule is one fault schedule.
type schedule struct {
	id      string // the -faults name and the column key
	n       int    // its number in issue 16
	title   string // the column title
	what    string // one sentence: what is done, for faults.md
	modeled bool   // the fault is modeled, not real
	ttl     time.Duration
	// parallel is how many events may run at once: faults confined to one
	// run's own clients and servers can overlap; server-wide ones cannot.
	parallel int
	// control: the schedule needs to control server processes (rig servers,
	// not -addrs).
	control bool
	// stuckAfter is the longest stall that still counts as live, for a
	// lock whose lease is ttl (scaled for a longer one: faultRun.stuckAfter).
	stuckAfter time.Duration
	// window, if set, replaces the default window (see window).
	window time.Duration
	// child: A runs in a child process.
	child bool
	// proxied: every client reaches the servers through its own fault
	// proxies.
	proxied bool
	// on lists the systems ("redis", "etcd", "zookeeper", "postgres") and
	// the locks (by name) the schedule applies to; a lock on none of them
	// gets "does not apply" in its cell. Nil means Redis only.
	on []string
	// runs, if set, replaces -fault-runs for this schedule when it is
	// smaller (a schedule whose every event pays a server's crash).
	runs int
	// run performs one event.
	run func(ev *event) error
}

// schedules are the nine of issue 16, in its order, then those of issue
// 34 for the locks on etcd, ZooKeeper and PostgreSQL (faults_systems.go).
var schedules []*schedule

func init() {
	all := []string{sysRedis, sysEtcd, sysZooKeeper, sysPostgres}
	schedules = []*schedule{
		{id: "pause", n: 1, title: "holder paused past its lease", ttl: time.Second, parallel: 2, child: true, on: all,
			stuckAfter: 4 * time.Second, window: time.Second + window,
			what: "A, a child process, is frozen with SIGSTOP inside its critical section until its lease has run out and B has written (or for the window); then SIGCONT, and A finishes its work.",
			run:  runPause},
		{id: "lost-reply", on: all, n: 2, title: "lost reply, library retry", ttl: time.Second, parallel: 2, proxied: true,
			stuckAfter: 4 * time.Second,
			what:       "A, B and C take the lock one after the other; the proxy delivers one of the lock's commands to the server and loses its reply (closes the client's connection): each of the lock's commands in turn, run by run (found by watching a fault-free run), on every server of the lock. The libraries retry on their default options.",
			run:        runLostReply},
		{id: "late", on: all, n: 3, title: "command delivered late", ttl: time.Second, parallel: 2, proxied: true,
			stuckAfter: 4 * time.Second,
			what:       "A, B and C take the lock one after the other; the proxy holds one of the lock's commands in the network, each in turn as in schedule 2, with go-redis's retries of it (4 copies), until the client has given up, and delivers them while another client holds the lock.",
			run:        runLate},
		{id: "failover", n: 4, title: "failover before replication", ttl: 15 * time.Second, parallel: 3, control: true,
			stuckAfter: 10 * time.Second, window: 4 * time.Second,
			what: "replication to the replica is held back in the network; A takes the lock on the primary; the primary is killed (SIGKILL); three sentinels promote the replica, which never saw the lock; B and C ask the new primary (through Sentinel). 5-node locks have one of their five nodes behind this Sentinel group.",
			run:  runFailover},
		{id: "restart", n: 5, title: "nodes restart empty", ttl: 5 * time.Second, parallel: 1, control: true,
			stuckAfter: 4 * time.Second,
			what:       "after A took the lock, server 0 (every single-server lock's) restarts at once without its data (no persistence), and in odd runs one more of the five, chosen by the seed.",
			run:        runRestart},
		{id: "latency", on: all, n: 6, title: "latency past the TTL", ttl: time.Second, parallel: 3, proxied: true,
			stuckAfter: 4 * time.Second,
			what:       "once A holds the lock and has read the resource, its connections (to the lock servers and the resource) gain twice its lease each way (2 s for the 1 s lease; 4 s for etcd, whose shortest lease is 2 s); A writes at once, so the write lands that much later.",
			run:        runLatency},
		{id: "eviction", n: 7, title: "eviction under memory pressure", ttl: 5 * time.Second, parallel: 1, control: true,
			stuckAfter: 4 * time.Second,
			what:       "the lock servers run with maxmemory-policy allkeys-lru; a second after A took the lock, a client fills memory until every lock key has been evicted (or 3x maxmemory was written).",
			run:        runEviction},
		{id: "clock", n: 8, title: "clock jump on one node", ttl: 5 * time.Second, parallel: 1, modeled: true,
			stuckAfter: 4 * time.Second,
			what:       "server 0's clock jumps 10 s forward. Modeled, as lab 08 does: redis-server will not run under libfaketime, and Redis keeps expiries as wall-clock times, so the jump is every key's remaining TTL on that server cut by 10 s (keys with less left expire at once). The model does not move the server's clock for later commands: a lock that sets absolute expiry times (rueidislock's SET PXAT) would see them in the past on a jumped server, which it does not show.",
			run:        runClock},
		{id: "kill", on: all, n: 9, title: "holder killed", ttl: time.Second, parallel: 2, child: true,
			stuckAfter: 3 * time.Second,
			what:       "A, a child process, is killed with SIGKILL inside its critical section; B and C want the lock. Liveness: how long until the next holder gets in (stuck: more than 3 s, three leases; 6 s for etcd, whose shortest lease is 2 s).",
			run:        runKill},
	}
	schedules = append(schedules, systemSchedules()...)
}

// commandFault reports whether s faults single commands (schedules 2 and
// 3, faults_cmd.go).
func (s *schedule) commandFault() bool { return s.id == "lost-reply" || s.id == "late" }

// faultWindow is the schedule's window (see window).
func (s *schedule) faultWindow() time.Duration {
	if s.window > 0 {
		return s.window
	}
	return window
}

// scheduleIDs returns every schedule's id, in order.
func scheduleIDs() []string {
	var out []string
	for _, s := range schedules {
		out = append(out, s.id)
	}
	return out
}

// resolveFaultImpls returns the scoreboard's locks: those named in -impls
// (globs allowed), or by default every lock the bench knows, the naive
// ones last as the control rows. The floors (raw) are not locks to judge.
func resolveFaultImpls(list []string) ([]*impl, error) {
	if len(list) == 0 {
		var names []string
		for n, im := range registry {
			if im.noFaults == "" {
				names = append(names, n)
			}
		}
		list = sortedImpls(names)
	}
	ims, err := resolveImpls(list)
	if err != nil {
		return nil, err
	}
	var out []*impl
	for _, im := range ims {
		if im.kind != kindFloor {
			out = append(out, im)
		}
	}
	// The naive locks last, after the locks on other systems too.
	slices.SortStableFunc(out, func(a, b *impl) int {
		switch {
		case a.naive == b.naive:
			return 0
		case b.naive:
			return -1
		}
		return 1
	})
	if len(out) == 0 {
		return nil, errors.New("-impls: no lock to run under faults (the raw floors are not judged)")
	}
	return out, nil
}

// scheduleByID returns the schedule with id.
func scheduleByID(id string) *schedule {
	for _, s := range schedules {
		if s.id == id {
			return s
		}
	}
	return nil
}

// faultSetup is what the scoreboard runs with.
type faultSetup struct {
	runs      int
	seed      uint64
	schedules []*schedule
	impls     []*impl
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
		var impls []*impl
		for _, im := range fs.impls {
			c := &cellResult{impl: im, sch: sch, all: fs.allTimelines}
			cells[im.name] = c
			out = append(out, c)
			if sch.appliesTo(im) {
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
		if (sch.id == "lost-reply" || sch.id == "late") && fs.ops == nil {
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
					cells[r.im.name].add(r)
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
	if sch.control && (fs.external || !rig.HasControl()) {
		return "needs control of the server processes (rig servers, not -addrs)"
	}
	if sch.id == "pooler" && (fs.external || !rig.HasControl()) {
		return "needs PgBouncer started by the rig"
	}
	return ""
}

// event runs one event of sch and returns its runs, judged.
func (fs *faultSetup) event(ctx context.Context, sch *schedule, impls []*impl, i int) ([]*faultRun, error) {
	ctx, cancel := context.WithTimeout(ctx, eventTimeout)
	defer cancel()
	seed := fs.seed*1000 + uint64(sch.n)*100 + uint64(i)
	ev := &event{ctx: ctx, setup: fs, sch: sch, index: i, seed: seed,
		rng:       rand.New(rand.NewPCG(seed, 0x10c61ab)),
		tag:       fmt.Sprintf("%sfaults:%s:%s:%d", keyRoot, randomID(), sch.id, i),
		lockAddrs: fs.srv.addrs[:faultLockServers],
		users:     &userClients{Timeout: userTimeout},
	}
	defer ev.close()
	for _, im := range impls {
		k := ev.tag + ":" + im.name
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
