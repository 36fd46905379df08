package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/locklab/locklab/bench/env"
	"github.com/locklab/locklab/bench/judge"
	"github.com/locklab/locklab/bench/registry"
	"github.com/locklab/locklab/fencing"
	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/internal/history"
	"github.com/redis/go-redis/v9"
)

// Event is one seeded instance of a schedule, for every lock at once.
type Event struct {
	ctx   context.Context
	setup *FaultSetup
	Sch   *Schedule
	index int // 0-based run number
	seed  uint64
	rng   *rand.Rand
	tag   string
	clock history.Clock
	runs  []*FaultRun

	// lockAddrs are the lock servers this event's clients use (by default
	// the scoreboard's five).
	lockAddrs []string
	users     *registry.UserClients
	// sysAddrs, when set for a system, replaces the addresses of its
	// servers (a pooler in front of PostgreSQL); protected by mu.
	sysAddrs map[string][]string

	mu      sync.Mutex
	proxies []*faultproxy.Proxy
	cleanup []func()
}

// run is one lock in one event.
type FaultRun struct {
	Ev   *Event
	Im   *registry.Lock
	hist *history.History
	key  string
	res  string

	a     holder
	child *remoteActor // A, when in a child process
	b, c  *actor
	aNet  []*faultproxy.Proxy            // A's proxies (lock servers, then the resource), when proxied
	nets  map[string][]*faultproxy.Proxy // every client's proxies, by name, when proxied
	// raw: every client's rawNet, by name, for a lock not on Redis under
	// schedules 2 and 3; its nets then hold the resource's proxy only.
	raw    map[string]*RawNet
	failed string // why the run could not be judged; "" if it could
	// declined says why the lock refused to run on the servers it was
	// given (they evict keys): a safe outcome, judged as such.
	declined string

	final int64
	v     judge.Verdict
	// ledger: the run's resource is the ledger in PostgreSQL (schedule
	// 13), not the counter on the resource server.
	ledger bool
	// pipeliners: the AutoPipeliners A, B and C share (schedule 14,
	// batch.go); nil: each client has its own connections.
	pipeliners []*redis.AutoPipeliner

	mu        sync.Mutex
	delivered time.Time // schedule 3: when the held copies were delivered
}

// fault records a fault on the run's timeline.
func (r *FaultRun) fault(format string, args ...any) { r.hist.Faultf(format, args...) }

// faultAll records a fault on every run's timeline.
func (ev *Event) faultAll(format string, args ...any) {
	for _, r := range ev.runs {
		r.fault(format, args...)
	}
}

// live returns the runs still going (A got its lock).
func (ev *Event) live() []*FaultRun {
	var out []*FaultRun
	for _, r := range ev.runs {
		if r.failed == "" && r.declined == "" {
			out = append(out, r)
		}
	}
	return out
}

// each runs fn for every live run at once and waits.
func (ev *Event) each(fn func(r *FaultRun)) {
	var wg sync.WaitGroup
	for _, r := range ev.live() {
		wg.Go(func() { fn(r) })
	}
	wg.Wait()
}

// proxy starts a fault proxy to target, closed with the event.
func (ev *Event) proxy(target string) (*faultproxy.Proxy, error) {
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
func (ev *Event) onClose(fn func()) {
	ev.mu.Lock()
	ev.cleanup = append(ev.cleanup, fn)
	ev.mu.Unlock()
}

// prepare makes every run's actors and warms them up. A runs in a child
// process when the schedule says so.
func (ev *Event) prepare() error {
	resAddr := ev.setup.Srv.Addrs[faultResource]
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
		return fmt.Errorf("%s run %d: no lock could be set up: %s", ev.Sch.ID, ev.index+1, ev.runs[0].failed)
	}
	return nil
}

func (r *FaultRun) prepare(resAddr string) error {
	ev := r.Ev
	addrs := ev.lockAddrs[:r.Im.Nodes]
	if sys := registry.SystemOf(r.Im); sys != registry.SysRedis {
		var err error
		if addrs, err = ev.systemAddrs(sys); err != nil {
			return err
		}
	}
	var probe []string // the lock's Redis servers, read around a failed release
	if registry.SystemOf(r.Im) == registry.SysRedis {
		probe = addrs
	}
	spec := func(name string, netAddrs []string, res string) actorSpec {
		return actorSpec{Name: name, Impl: r.Im.Name, Key: r.key, Res: r.res, ResAddr: res, Addrs: netAddrs,
			TTL: ev.Sch.TTL, Users: ev.users, ClockBase: ev.clock.Base(), Pipeliners: r.pipeliners, Probe: probe}
	}
	// Each client has its own network: its own proxies when the schedule
	// puts faults on connections.
	network := func(name string) ([]string, string, []*faultproxy.Proxy, error) {
		if !ev.Sch.proxied {
			return addrs, resAddr, nil, nil
		}
		var out []string
		var ps []*faultproxy.Proxy
		targets := append(slices.Clone(addrs), resAddr)
		if ev.Sch.commandFault && registry.SystemOf(r.Im) != registry.SysRedis {
			// The lock's servers through a rawNet (rawnet.go);
			// the resource through a fault proxy, as for every lock.
			rn := NewRawNet()
			ev.onClose(rn.Close)
			r.raw[name] = rn
			for _, a := range addrs {
				la, err := rn.Listen(a)
				if err != nil {
					return nil, "", nil, err
				}
				out = append(out, la)
			}
			targets = []string{resAddr}
		}
		for _, a := range targets {
			p, err := ev.proxy(a)
			if err != nil {
				return nil, "", nil, err
			}
			ps = append(ps, p)
			out = append(out, p.Addr())
		}
		return out[:len(addrs)], out[len(addrs)], ps, nil
	}
	r.raw = map[string]*RawNet{}
	record := r.hist.Add
	barrier := newPairBarrier(50 * time.Millisecond)
	r.nets = map[string][]*faultproxy.Proxy{}
	for _, name := range []string{"B", "C"} {
		na, nr, ps, err := network(name)
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
		ev.onClose(a.Close)
	}
	na, nr, ps, err := network("A")
	if err != nil {
		return err
	}
	r.nets["A"], r.aNet = ps, ps
	if ev.Sch.child {
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
	ev.onClose(r.a.Close)
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
func (ev *Event) beginA() map[*FaultRun]chan error {
	finished := map[*FaultRun]chan error{}
	var mu sync.Mutex
	ev.each(func(r *FaultRun) {
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
func (r *FaultRun) contend(bound time.Duration, finished chan error, whenBWrote func()) {
	wrote := make(chan struct{})
	var once sync.Once
	signal := func() { once.Do(func() { close(wrote) }) }
	var wg sync.WaitGroup
	wg.Go(func() {
		r.b.cycle(r.Ev.ctx, bound, holdB, signal)
		signal()
	})
	wg.Go(func() {
		env.SleepCtx(r.Ev.ctx, 20*time.Millisecond)
		r.c.cycle(r.Ev.ctx, bound, holdB, signal)
	})
	select {
	case <-wrote:
	case <-time.After(r.Ev.Sch.faultWindow() + r.Lease() - r.Ev.Sch.TTL):
	case <-r.Ev.ctx.Done():
	}
	if whenBWrote != nil {
		whenBWrote()
	}
	wg.Wait()
	if finished != nil {
		select {
		case <-finished:
		case <-r.Ev.ctx.Done():
		}
	}
}

// standard is the script of the server-side faults: every A begins, the
// fault is injected once for all, then each run's B and C want the lock,
// and A finishes its work once B has written or the window passed.
func (ev *Event) standard(inject func() error) error {
	finished := ev.beginA()
	if err := inject(); err != nil {
		return err
	}
	ev.each(func(r *FaultRun) {
		r.contend(ev.Sch.faultWindow()+ev.Sch.TTL+2*time.Second, finished[r], r.a.Release)
	})
	return nil
}

// finish reads every run's resource and judges it.
func (ev *Event) judgeAll() {
	res := ev.setup.Srv.Admin[faultResource]
	for _, r := range ev.runs {
		if r.failed != "" || r.declined != "" {
			continue
		}
		var v int64
		var err error
		if r.ledger {
			v, err = env.Others.PgLedgerCount(context.Background(), r.res)
		} else {
			v, err = res.HGet(context.Background(), r.res, "v").Int64()
			if errors.Is(err, redis.Nil) {
				v, err = 0, nil
			}
		}
		if err != nil {
			r.failed = "reading the resource: " + shortErr(err)
			continue
		}
		r.final = v
		r.v = judge.Run(r.hist.Events(), v, r.fenced(), r.StuckAfter())
	}
}

// refused reports whether a client's lock refused the server (recorded
// on the timeline as "refused: ...").
func (r *FaultRun) refused() bool {
	for _, e := range r.hist.Events() {
		if e.Kind == history.Acquire && strings.HasPrefix(e.Text, "refused: ") {
			return true
		}
	}
	return false
}

// fenced reports whether the run's lock gives fencing tokens, so its
// clients write through the fenced store.
func (r *FaultRun) fenced() bool {
	if r.ledger {
		// The ledger is written only in the lock's transaction, which
		// commits with the release or not at all: the transaction is the
		// fence, and an overlap harms the ledger only as a lost update.
		return true
	}
	_, ok := r.b.l.(interface{ Token() fencing.Token })
	_, fence := r.b.l.(interface{ Fence() uint64 })
	return ok || fence
}

// Close ends the event: clients, children, proxies, cleanups, keys.
func (ev *Event) Close() {
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
	_, _ = ev.setup.Srv.Sweep(ctx, "*"+ev.tag+"*")
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

// newHist gives the runs their histories; called by the schedules once
// the event's clock is set (in prepare).
func (ev *Event) histories() {
	for _, r := range ev.runs {
		r.hist = history.New(ev.clock)
	}
}

// startEvent is the common start of every schedule: histories, actors.
func (ev *Event) start() error {
	ev.clock = history.NewClock()
	ev.histories()
	return ev.prepare()
}
