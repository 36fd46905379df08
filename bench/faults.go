package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/fencing"
	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/internal/history"
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
	// stuckAfter is the longest stall that still counts as live.
	stuckAfter time.Duration
	// window, if set, replaces the default window (see window).
	window time.Duration
	// child: A runs in a child process.
	child bool
	// proxied: every client reaches the servers through its own fault
	// proxies.
	proxied bool
	// run performs one event.
	run func(ev *event) error
}

// schedules are the nine of issue 16, in its order.
var schedules []*schedule

func init() {
	schedules = []*schedule{
		{id: "pause", n: 1, title: "holder paused past its lease", ttl: time.Second, parallel: 2, child: true,
			stuckAfter: 4 * time.Second, window: time.Second + window,
			what: "A, a child process, is frozen with SIGSTOP inside its critical section until its lease has run out and B has written (or for the window); then SIGCONT, and A finishes its work.",
			run:  runPause},
		{id: "lost-reply", n: 2, title: "lost reply, library retry", ttl: time.Second, parallel: 2, proxied: true,
			stuckAfter: 4 * time.Second,
			what:       "A, B and C take the lock one after the other; the proxy delivers one of the lock's commands to the server and loses its reply (closes the client's connection): each of the lock's commands in turn, run by run (found by watching a fault-free run), on every server of the lock. The libraries retry on their default options.",
			run:        runLostReply},
		{id: "late", n: 3, title: "command delivered late", ttl: time.Second, parallel: 2, proxied: true,
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
		{id: "latency", n: 6, title: "latency past the TTL", ttl: time.Second, parallel: 3, proxied: true,
			stuckAfter: 4 * time.Second,
			what:       "once A holds the lock and has read the resource, its connections (to the lock servers and the resource) gain 2 s each way, twice its 1 s lease; A writes at once, so the write lands 2 s later.",
			run:        runLatency},
		{id: "eviction", n: 7, title: "eviction under memory pressure", ttl: 5 * time.Second, parallel: 1, control: true,
			stuckAfter: 4 * time.Second,
			what:       "the lock servers run with maxmemory-policy allkeys-lru; a second after A took the lock, a client fills memory until every lock key has been evicted (or 3x maxmemory was written).",
			run:        runEviction},
		{id: "clock", n: 8, title: "clock jump on one node", ttl: 5 * time.Second, parallel: 1, modeled: true,
			stuckAfter: 4 * time.Second,
			what:       "server 0's clock jumps 10 s forward. Modeled, as lab 08 does: redis-server will not run under libfaketime, and Redis keeps expiries as wall-clock times, so the jump is every key's remaining TTL on that server cut by 10 s (keys with less left expire at once). The model does not move the server's clock for later commands: a lock that sets absolute expiry times (rueidislock's SET PXAT) would see them in the past on a jumped server, which it does not show.",
			run:        runClock},
		{id: "kill", n: 9, title: "holder killed", ttl: time.Second, parallel: 2, child: true,
			stuckAfter: 3 * time.Second,
			what:       "A, a child process, is killed with SIGKILL inside its critical section; B and C want the lock. Liveness: how long until the next holder gets in (stuck: more than 3 s, three leases).",
			run:        runKill},
	}
}

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

// event is one seeded instance of a schedule, for every lock at once.
type event struct {
	ctx   context.Context
	setup *faultSetup
	sch   *schedule
	index int // 0-based run number
	seed  uint64
	rng   *rand.Rand
	tag   string
	clock history.Clock
	runs  []*faultRun

	// lockAddrs are the lock servers this event's clients use (by default
	// the scoreboard's five).
	lockAddrs []string
	users     *userClients

	mu      sync.Mutex
	proxies []*faultproxy.Proxy
	cleanup []func()
}

// run is one lock in one event.
type faultRun struct {
	ev   *event
	im   *impl
	hist *history.History
	key  string
	res  string

	a      holder
	child  *remoteActor // A, when in a child process
	b, c   *actor
	aNet   []*faultproxy.Proxy            // A's proxies (lock servers, then the resource), when proxied
	nets   map[string][]*faultproxy.Proxy // every client's proxies, by name, when proxied
	failed string                         // why the run could not be judged; "" if it could
	// declined says why the lock refused to run on the servers it was
	// given (they evict keys): a safe outcome, judged as such.
	declined string

	final int64
	v     verdict

	mu        sync.Mutex
	delivered time.Time // schedule 3: when the held copies were delivered
}

// fault records a fault on the run's timeline.
func (r *faultRun) fault(format string, args ...any) { r.hist.Faultf(format, args...) }

// faultAll records a fault on every run's timeline.
func (ev *event) faultAll(format string, args ...any) {
	for _, r := range ev.runs {
		r.fault(format, args...)
	}
}

// live returns the runs still going (A got its lock).
func (ev *event) live() []*faultRun {
	var out []*faultRun
	for _, r := range ev.runs {
		if r.failed == "" && r.declined == "" {
			out = append(out, r)
		}
	}
	return out
}

// each runs fn for every live run at once and waits.
func (ev *event) each(fn func(r *faultRun)) {
	var wg sync.WaitGroup
	for _, r := range ev.live() {
		wg.Go(func() { fn(r) })
	}
	wg.Wait()
}

// proxy starts a fault proxy to target, closed with the event.
func (ev *event) proxy(target string) (*faultproxy.Proxy, error) {
	p, err := faultproxy.New(target)
	if err != nil {
		return nil, err
	}
	ev.mu.Lock()
	ev.proxies = append(ev.proxies, p)
	ev.mu.Unlock()
	return p, nil
}

// onClose adds a cleanup to the event's end (last added runs first).
func (ev *event) onClose(fn func()) {
	ev.mu.Lock()
	ev.cleanup = append(ev.cleanup, fn)
	ev.mu.Unlock()
}

// prepare makes every run's actors and warms them up. A runs in a child
// process when the schedule says so.
func (ev *event) prepare() error {
	resAddr := ev.setup.srv.addrs[faultResource]
	var wg sync.WaitGroup
	for _, r := range ev.runs {
		wg.Go(func() {
			if err := r.prepare(resAddr); err != nil {
				if refusesServer(err) {
					r.declined = longErr(err)
				} else {
					r.failed = "setup: " + longErr(err)
				}
			}
		})
	}
	wg.Wait()
	if len(ev.live()) == 0 && ev.runs[0].declined == "" {
		return fmt.Errorf("%s run %d: no lock could be set up: %s", ev.sch.id, ev.index+1, ev.runs[0].failed)
	}
	return nil
}

func (r *faultRun) prepare(resAddr string) error {
	ev := r.ev
	addrs := ev.lockAddrs[:r.im.nodes]
	spec := func(name string, netAddrs []string, res string) actorSpec {
		return actorSpec{Name: name, Impl: r.im.name, Key: r.key, Res: r.res, ResAddr: res, Addrs: netAddrs,
			TTL: ev.sch.ttl, Users: ev.users, ClockBase: ev.clock.Base()}
	}
	// Each client has its own network: its own proxies when the schedule
	// puts faults on connections.
	network := func() ([]string, string, []*faultproxy.Proxy, error) {
		if !ev.sch.proxied {
			return addrs, resAddr, nil, nil
		}
		var out []string
		var ps []*faultproxy.Proxy
		for _, a := range append(slices.Clone(addrs), resAddr) {
			p, err := ev.proxy(a)
			if err != nil {
				return nil, "", nil, err
			}
			ps = append(ps, p)
			out = append(out, p.Addr())
		}
		return out[:len(addrs)], out[len(addrs)], ps, nil
	}
	record := r.hist.Add
	barrier := newPairBarrier(50 * time.Millisecond)
	r.nets = map[string][]*faultproxy.Proxy{}
	for _, name := range []string{"B", "C"} {
		na, nr, ps, err := network()
		if err != nil {
			return err
		}
		r.nets[name] = ps
		a, err := newActor(spec(name, na, nr), ev.clock, record, barrier.hook)
		if err != nil {
			return err
		}
		if name == "B" {
			r.b = a
		} else {
			r.c = a
		}
		ev.onClose(a.close)
	}
	na, nr, ps, err := network()
	if err != nil {
		return err
	}
	r.nets["A"], r.aNet = ps, ps
	if ev.sch.child {
		ra, err := startChild(spec("A", na, nr), record)
		if err != nil {
			return err
		}
		r.a, r.child = ra, ra
	} else {
		a, err := newActor(spec("A", na, nr), ev.clock, record, nil)
		if err != nil {
			return err
		}
		r.a = a
	}
	ev.onClose(r.a.close)
	ctx, cancel := context.WithTimeout(ev.ctx, 20*time.Second)
	defer cancel()
	// Each client warms up on a key of its own: the warm-up opens
	// connections and loads scripts, and measures nothing.
	warm := r.key + ":warm:"
	for _, w := range []func() error{
		func() error { return r.a.warm(ctx, warm+"A") },
		func() error { return r.b.warm(ctx, warm+"B") },
		func() error { return r.c.warm(ctx, warm+"C") },
	} {
		if err := w(); err != nil {
			if r.child != nil {
				return fmt.Errorf("%w (client process: %s)", err, strings.TrimSpace(r.child.stderr.String()))
			}
			return err
		}
	}
	return nil
}

// beginA has every run's A take its lock, enter and read, and then start
// its work, which lasts until release (or until its lock says it is
// lost). A run whose A did not get the lock cannot be judged.
func (ev *event) beginA() map[*faultRun]chan error {
	finished := map[*faultRun]chan error{}
	var mu sync.Mutex
	ev.each(func(r *faultRun) {
		if err := r.a.begin(ev.ctx, 5*time.Second); err != nil {
			if r.refused() {
				r.declined = "A's Lock refused the server"
			} else {
				r.failed = "A did not get the lock at the start: " + longErr(err)
			}
			return
		}
		ch := make(chan error, 1)
		go func() { ch <- r.a.finish(ev.ctx) }()
		mu.Lock()
		finished[r] = ch
		mu.Unlock()
	})
	return finished
}

// contend runs B's and C's turns: B wants the lock at once, C just after.
// Once one of them has written (or B gave up, or the window passed) it
// calls whenBWrote; then it waits for both to finish, and for A's work.
func (r *faultRun) contend(bound time.Duration, finished chan error, whenBWrote func()) {
	wrote := make(chan struct{})
	var once sync.Once
	signal := func() { once.Do(func() { close(wrote) }) }
	var wg sync.WaitGroup
	wg.Go(func() {
		r.b.cycle(r.ev.ctx, bound, holdB, signal)
		signal()
	})
	wg.Go(func() {
		sleepCtx(r.ev.ctx, 20*time.Millisecond)
		r.c.cycle(r.ev.ctx, bound, holdB, signal)
	})
	select {
	case <-wrote:
	case <-time.After(r.ev.sch.faultWindow()):
	case <-r.ev.ctx.Done():
	}
	if whenBWrote != nil {
		whenBWrote()
	}
	wg.Wait()
	if finished != nil {
		select {
		case <-finished:
		case <-r.ev.ctx.Done():
		}
	}
}

// standard is the script of the server-side faults: every A begins, the
// fault is injected once for all, then each run's B and C want the lock,
// and A finishes its work once B has written or the window passed.
func (ev *event) standard(inject func() error) error {
	finished := ev.beginA()
	if err := inject(); err != nil {
		return err
	}
	ev.each(func(r *faultRun) {
		r.contend(ev.sch.faultWindow()+ev.sch.ttl+2*time.Second, finished[r], r.a.release)
	})
	return nil
}

// finish reads every run's resource and judges it.
func (ev *event) judgeAll() {
	res := ev.setup.srv.admin[faultResource]
	for _, r := range ev.runs {
		if r.failed != "" || r.declined != "" {
			continue
		}
		v, err := res.HGet(context.Background(), r.res, "v").Int64()
		if errors.Is(err, redis.Nil) {
			v, err = 0, nil
		}
		if err != nil {
			r.failed = "reading the resource: " + shortErr(err)
			continue
		}
		r.final = v
		r.v = judge(r.hist.Events(), v, r.fenced(), ev.sch.stuckAfter)
	}
}

// refused reports whether a client's lock refused the server (recorded
// on the timeline as "refused: ...").
func (r *faultRun) refused() bool {
	for _, e := range r.hist.Events() {
		if e.Kind == history.Acquire && strings.HasPrefix(e.Text, "refused: ") {
			return true
		}
	}
	return false
}

// fenced reports whether the run's lock gives fencing tokens, so its
// clients write through the fenced store.
func (r *faultRun) fenced() bool {
	_, ok := r.b.l.(interface{ Token() fencing.Token })
	return ok
}

// close ends the event: clients, children, proxies, cleanups, keys.
func (ev *event) close() {
	ev.mu.Lock()
	cl := slices.Clone(ev.cleanup)
	ps := slices.Clone(ev.proxies)
	ev.mu.Unlock()
	var wg sync.WaitGroup
	for i := len(cl) - 1; i >= 0; i-- {
		wg.Go(cl[i])
	}
	wg.Wait()
	for _, p := range ps {
		_ = p.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, _ = ev.setup.srv.sweep(ctx, "*"+ev.tag+"*")
}

// pairBarrier is a hook for B's and C's locks: at package naive's
// "after-get-empty" point (naive.GetThenSet saw the key free and is about
// to SET it), the first client waits up to d for the other to get there
// too, as two clients polling a freed key at the same moment do. Other
// locks never call it with that point.
type pairBarrier struct {
	d    time.Duration
	mu   sync.Mutex
	wait chan struct{}
}

func newPairBarrier(d time.Duration) *pairBarrier { return &pairBarrier{d: d} }

func (p *pairBarrier) hook(ctx context.Context, point string) {
	if point != "after-get-empty" {
		return
	}
	p.mu.Lock()
	if p.wait != nil {
		close(p.wait) // the second one: both go on
		p.wait = nil
		p.mu.Unlock()
		return
	}
	ch := make(chan struct{})
	p.wait = ch
	p.mu.Unlock()
	select {
	case <-ch:
	case <-time.After(p.d):
		p.mu.Lock()
		if p.wait == ch {
			p.wait = nil
		}
		p.mu.Unlock()
	case <-ctx.Done():
	}
}

// runFaults runs every selected schedule and returns the results.
func runFaults(ctx context.Context, fs *faultSetup, progress io.Writer) ([]*cellResult, error) {
	var out []*cellResult
	for _, sch := range fs.schedules {
		cells := map[string]*cellResult{}
		for _, im := range fs.impls {
			c := &cellResult{impl: im, sch: sch, all: fs.allTimelines}
			cells[im.name] = c
			out = append(out, c)
		}
		if why := fs.skip(sch); why != "" {
			for _, c := range cells {
				c.notRun = why
			}
			fmt.Fprintf(progress, "faults: %d. %s: not run: %s\n", sch.n, sch.title, why)
			continue
		}
		start := time.Now()
		if (sch.id == "lost-reply" || sch.id == "late") && fs.ops == nil {
			if _, err := fs.lockOps(ctx); err != nil {
				return nil, err
			}
			fmt.Fprintf(progress, "faults: found the commands of %d locks in %s\n", len(fs.impls), time.Since(start).Round(100*time.Millisecond))
		}
		var mu sync.Mutex
		var firstErr error
		sem := make(chan struct{}, max(sch.parallel, 1))
		var wg sync.WaitGroup
		for i := range fs.runs {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				runs, err := fs.event(ctx, sch, i)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					if firstErr == nil {
						firstErr = err
					}
					fmt.Fprintf(progress, "faults: %d. %s run %d: %v\n", sch.n, sch.title, i+1, err)
				}
				for _, r := range runs {
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
		fmt.Fprintf(progress, "faults: %d. %s: %d runs of %d locks in %s\n", sch.n, sch.title, fs.runs, len(fs.impls),
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
	return ""
}

// event runs one event of sch and returns its runs, judged.
func (fs *faultSetup) event(ctx context.Context, sch *schedule, i int) ([]*faultRun, error) {
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
	for _, im := range fs.impls {
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

// newHist gives the runs their histories; called by the schedules once
// the event's clock is set (in prepare).
func (ev *event) histories() {
	for _, r := range ev.runs {
		r.hist = history.New(ev.clock)
	}
}

// startEvent is the common start of every schedule: histories, actors.
func (ev *event) start() error {
	ev.clock = history.NewClock()
	ev.histories()
	return ev.prepare()
}

// runPause: schedule 1.
func runPause(ev *event) error {
	if err := ev.start(); err != nil {
		return err
	}
	finished := ev.beginA()
	ev.each(func(r *faultRun) {
		if err := r.child.freeze(); err != nil {
			r.failed = "SIGSTOP: " + shortErr(err)
			return
		}
		r.fault("SIGSTOP A (frozen in its critical section)")
		r.contend(ev.sch.faultWindow()+ev.sch.ttl+2*time.Second, finished[r], func() {
			r.fault("SIGCONT A (resumes)")
			_ = r.child.thaw()
			r.a.release()
		})
	})
	return nil
}

// runKill: schedule 9.
func runKill(ev *event) error {
	if err := ev.start(); err != nil {
		return err
	}
	ev.beginA()
	ev.each(func(r *faultRun) {
		if err := r.child.kill(); err != nil {
			r.failed = "SIGKILL: " + shortErr(err)
			return
		}
		r.fault("kill -9 A (inside its critical section)")
		r.hist.Add(history.Event{Client: "A", Kind: history.Exit, Text: "(killed)"})
		r.contend(4*ev.sch.ttl+3*time.Second, nil, nil)
	})
	return nil
}

// runLatency: schedule 6.
func runLatency(ev *event) error {
	if err := ev.start(); err != nil {
		return err
	}
	finished := ev.beginA()
	lat := 2 * ev.sch.ttl
	ev.each(func(r *faultRun) {
		for _, p := range r.aNet {
			p.SetLatency(lat)
		}
		r.fault("A's connections: +%v each way (its lease is %v)", lat, ev.sch.ttl)
		r.a.release() // A writes now: the write lands lat later
		r.contend(ev.sch.faultWindow()+ev.sch.ttl+2*time.Second, nil, nil)
		select {
		case <-finished[r]:
		case <-ev.ctx.Done():
		}
		for _, p := range r.aNet {
			p.SetLatency(0)
		}
	})
	return nil
}

// runRestart: schedule 5.
func runRestart(ev *event) error {
	if err := ev.start(); err != nil {
		return err
	}
	nodes := []int{0}
	if ev.index%2 == 1 {
		nodes = append(nodes, 1+ev.rng.IntN(faultLockServers-1))
	}
	return ev.standard(func() error {
		var wg sync.WaitGroup
		errs := make([]error, len(nodes))
		for i, n := range nodes {
			wg.Go(func() { errs[i] = ev.setup.srv.nodes[n].Restart(ev.ctx, false) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("restart: %w", err)
		}
		names := make([]string, len(nodes))
		for i, n := range nodes {
			names[i] = "server " + strconv.Itoa(n)
		}
		ev.faultAll("%s restarted empty (SIGKILL, no persistence)", strings.Join(names, " and "))
		return nil
	})
}

// clockJump is how far server 0's clock jumps in schedule 8.
const clockJump = 10 * time.Second

// runClock: schedule 8.
func runClock(ev *event) error {
	if err := ev.start(); err != nil {
		return err
	}
	return ev.standard(func() error {
		n, err := jumpClock(ev.ctx, ev.setup.srv.admin[0], "*"+ev.tag+"*", clockJump)
		if err != nil {
			return err
		}
		ev.faultAll("server 0's clock jumps %v forward (modeled: %d keys' TTLs cut by %v)", clockJump, n, clockJump)
		return nil
	})
}
