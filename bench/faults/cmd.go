package faults

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/locklab/locklab/bench/env"
	"github.com/locklab/locklab/bench/registry"
	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/internal/history"
)

// Schedules 2 (lost reply) and 3 (late delivery) fault one command of a
// lock at a time: each of the lock's commands in turn, as each client
// sends it. Which commands a lock sends is found once per scoreboard, lock
// by lock, in two fault-free runs of the same script: the first watches
// server 0 (MONITOR) for the distinct commands, in the order they first
// appear (a script counts by its SHA-1, so EVALSHA and its EVAL fallback
// are one); the second counts, through each client's own proxies, which
// clients send each of them. Run i then faults pair i mod K (a command and
// a client that sends it), at its (i div K)-th occurrence from that
// client, on every server of the lock.

// LockOp is one command of a lock's protocol.
type LockOp struct {
	Name string // upper case
	Sha  string // for EVAL/EVALSHA: the script's SHA-1
	// raw, for a lock not on Redis: the op is the chunk-th chunk (0-based)
	// a client sends in a turn (rawnet.go).
	raw   bool
	chunk int
}

func (o LockOp) String() string {
	if o.raw {
		return fmt.Sprintf("the %s request (chunk of bytes) sent", ordinal(o.chunk+1))
	}
	if o.Sha != "" {
		return "the script " + o.Sha[:8] + " (EVALSHA)"
	}
	return o.Name
}

// Short names the op in a list: SET, EVALSHA 3f2a1b0c.
func (o LockOp) Short() string {
	if o.raw {
		return fmt.Sprintf("request %d", o.chunk+1)
	}
	if o.Sha != "" {
		return "EVALSHA " + o.Sha[:8]
	}
	return o.Name
}

func (o LockOp) match() faultproxy.Match {
	if o.Sha != "" {
		return faultproxy.Match{Script: o.Sha} // EVALSHA, and EVAL after NOSCRIPT
	}
	return faultproxy.Match{Command: o.Name}
}

// faultOp is a command of a lock as one client sends it.
type faultOp struct {
	Op     LockOp
	Client string
}

// lateCopies is how many copies of a command schedule 3 holds: the
// command and go-redis's 3 retries of it, so the client gives up.
const lateCopies = 4

// runCommandFault runs one event of schedule 2 (late false) or 3.
func runCommandFault(ev *Event, late bool) error {
	ops, err := ev.setup.lockOps(ev.ctx)
	if err != nil {
		return err
	}
	if err := ev.start(); err != nil {
		return err
	}
	ev.each(func(r *FaultRun) {
		list := ops[r.Im.Name]
		if len(list) == 0 {
			r.failed = "no command of this lock was seen in the fault-free run"
			return
		}
		fo := list[ev.index%len(list)]
		if fo.Op.raw {
			r.rawCommandFault(fo, late)
			return
		}
		op := fo.Op
		pass := ev.index / len(list)
		nth := ordinal(pass + 1)
		net := r.nets[fo.Client]
		net = net[:len(net)-1] // the lock servers, not the resource
		var rules []*faultproxy.Rule
		for _, p := range net {
			if late {
				rules = append(rules, p.Hold(op.match(), lateCopies).After(pass))
			} else {
				rules = append(rules, p.DropReply(op.match(), 1).After(pass))
			}
		}
		what := fmt.Sprintf("%s from %s, its %s time", op, fo.Client, nth)
		if late {
			r.fault("armed: hold %s in the network, with the retries (%d copies), until the client gave up and another client holds the lock", what, lateCopies)
		} else {
			r.fault("armed: lose the reply to %s (the server runs it; the client's connection closes)", what)
		}
		var wg sync.WaitGroup
		wctx, stop := context.WithCancel(ev.ctx)
		for i, rule := range rules {
			wg.Go(func() { r.watchRule(wctx, rule, fo.Client, i, len(rules), late) })
		}
		var more func() bool
		if late {
			// The clients keep taking turns until the held copies have
			// been delivered (and a moment after), so that they land on
			// a lock someone holds.
			more = func() bool { return r.holding(rules) }
		}
		r.cycleAll(4*ev.Sch.TTL+2*time.Second, more)
		stop()
		wg.Wait()
		for _, rule := range rules {
			rule.Remove() // releases anything still held
		}
		fired := false
		for _, rule := range rules {
			fired = fired || rule.Hits() > 0
		}
		if !fired {
			r.fault("(%s never came: the lock sent it fewer times in this run)", what)
		}
	})
	return nil
}

// watchRule records when a rule acts; for a Hold rule it delivers the
// held copies once the client has given up (its retries were held too,
// and its read timeout passed) and another client holds the lock, or
// after the window.
func (r *FaultRun) watchRule(ctx context.Context, rule *faultproxy.Rule, client string, server, servers int, late bool) {
	if rule.Wait(ctx, 1) != nil {
		return // the run ended without the command
	}
	held := r.Ev.clock.Now()
	on := ""
	if servers > 1 {
		on = fmt.Sprintf(" on server %d", server)
	}
	if !late {
		r.fault("reply lost%s (the server ran the command)", on)
		return
	}
	r.fault("command held in the network%s", on)
	wctx, cancel := context.WithTimeout(ctx, time.Duration(lateCopies)*(userTimeout+600*time.Millisecond))
	_ = rule.Wait(wctx, lateCopies)
	cancel()
	// The client gives up after its last copy's read timeout: its lock
	// call fails.
	deadline := time.Now().Add(userTimeout + 300*time.Millisecond)
	for time.Now().Before(deadline) && !r.failedSince(client, held) {
		if !env.SleepCtx(ctx, 5*time.Millisecond) {
			return
		}
	}
	deadline = time.Now().Add(window)
	for time.Now().Before(deadline) && !r.someoneInside() {
		if !env.SleepCtx(ctx, 5*time.Millisecond) {
			return
		}
	}
	r.fault("%d held cop%s delivered now%s, after the client gave up", rule.Hits(), map[bool]string{true: "y", false: "ies"}[rule.Hits() == 1], on)
	rule.Release()
	r.mu.Lock()
	r.delivered = time.Now()
	r.mu.Unlock()
}

// holding reports whether a Hold rule of the run has held a command that
// was not delivered 300 ms ago yet.
func (r *FaultRun) holding(rules []*faultproxy.Rule) bool {
	fired := false
	for _, rule := range rules {
		fired = fired || rule.Hits() > 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return fired && (r.delivered.IsZero() || time.Since(r.delivered) < 300*time.Millisecond)
}

// failedSince reports whether client's Lock or Unlock failed after at.
func (r *FaultRun) failedSince(client string, at time.Duration) bool {
	for _, e := range r.hist.Events() {
		if e.Client == client && e.At >= at && !e.OK && (e.Kind == history.Acquire || e.Kind == history.Release) {
			return true
		}
	}
	return false
}

// someoneInside reports whether a client is in the critical section now.
func (r *FaultRun) someoneInside() bool {
	inside := map[string]bool{}
	for _, e := range r.hist.Events() {
		switch e.Kind {
		case history.Enter:
			inside[e.Client] = true
		case history.Exit:
			delete(inside, e.Client)
		}
	}
	return len(inside) > 0
}

// cycleAll is the script of schedules 2 and 3 and of the discovery run:
// A, B and C each take the lock, read, write, hold it 150 ms and release
// it, B starting 20 ms after A and C 20 ms after B; each goes again
// while more (if not nil) says so, for at most bound in all (twice bound
// with more).
func (r *FaultRun) cycleAll(bound time.Duration, more func() bool) {
	var wg sync.WaitGroup
	end := time.Now().Add(bound)
	if more != nil {
		// A client whose call is held gives up only when its own
		// context ends (etcd's, ZooKeeper's and PostgreSQL's clients wait
		// that long): the others keep taking turns past it, so that the
		// held bytes land on a lock someone holds.
		end = end.Add(bound)
	}
	for i, a := range []*actor{r.a.(*actor), r.b, r.c} {
		wg.Go(func() {
			if !env.SleepCtx(r.Ev.ctx, time.Duration(i)*20*time.Millisecond) {
				return
			}
			for {
				a.cycle(r.Ev.ctx, bound, holdB, nil)
				if more == nil || !more() || time.Now().After(end) || r.Ev.ctx.Err() != nil {
					return
				}
			}
		})
	}
	wg.Wait()
}

func ordinal(n int) string {
	switch n {
	case 1:
		return "1st"
	case 2:
		return "2nd"
	case 3:
		return "3rd"
	}
	return strconv.Itoa(n) + "th"
}

// lockOps finds every lock's commands, once.
func (fs *FaultSetup) lockOps(ctx context.Context) (map[string][]faultOp, error) {
	fs.opsOnce.Do(func() {
		fs.Ops = map[string][]faultOp{}
		for _, im := range fs.Impls {
			ops, err := fs.discover(ctx, im)
			if err != nil {
				fs.opsErr = fmt.Errorf("finding %s's commands: %w", im.Name, err)
				return
			}
			fs.Ops[im.Name] = ops
		}
	})
	return fs.Ops, fs.opsErr
}

// discover runs the script of schedules 2 and 3 twice for im, without
// faults: once watching server 0 for the commands, once counting who
// sends each.
func (fs *FaultSetup) discover(ctx context.Context, im *registry.Lock) ([]faultOp, error) {
	if registry.SystemOf(im) != registry.SysRedis {
		return fs.discoverRaw(ctx, im)
	}
	var ops []LockOp
	if err := fs.discoveryRun(ctx, im, false, func(ev *Event) error {
		mon, err := startMonitor(ctx, fs.Srv.Addrs[0])
		if err != nil {
			return err
		}
		ev.each(func(r *FaultRun) { r.cycleAll(4*ev.Sch.TTL+2*time.Second, nil) })
		ops = mon.stop()
		return nil
	}); err != nil {
		return nil, err
	}
	var out []faultOp
	err := fs.discoveryRun(ctx, im, true, func(ev *Event) error {
		r := ev.runs[0]
		counts := map[faultOp]*faultproxy.Rule{}
		for _, name := range []string{"A", "B", "C"} {
			for _, op := range ops {
				counts[faultOp{op, name}] = r.nets[name][0].Count(op.match())
			}
		}
		ev.each(func(r *FaultRun) { r.cycleAll(4*ev.Sch.TTL+2*time.Second, nil) })
		for _, op := range ops {
			for _, name := range []string{"A", "B", "C"} {
				if counts[faultOp{op, name}].Hits() > 0 {
					out = append(out, faultOp{op, name})
				}
			}
		}
		return nil
	})
	return out, err
}

// discoveryRun makes a one-lock event, direct or through per-client
// proxies, and runs fn in it.
func (fs *FaultSetup) discoveryRun(ctx context.Context, im *registry.Lock, proxied bool, fn func(ev *Event) error) error {
	sch := *ScheduleByID("lost-reply")
	sch.proxied = proxied
	ev := &Event{ctx: ctx, setup: fs, Sch: &sch, tag: fmt.Sprintf("%sfaults:%s:discover", env.KeyRoot, env.RandomID()),
		lockAddrs: fs.Srv.Addrs[:faultLockServers], users: &registry.UserClients{Timeout: userTimeout}}
	defer ev.Close()
	ev.runs = []*FaultRun{{Ev: ev, Im: im, key: ev.tag + ":" + im.Name + ":lock", res: ev.tag + ":" + im.Name + ":res"}}
	if err := ev.start(); err != nil {
		return err
	}
	if err := fn(ev); err != nil {
		return err
	}
	if r := ev.runs[0]; r.failed != "" {
		return errors.New(r.failed)
	}
	return nil
}
