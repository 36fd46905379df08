package speed

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locklab/locklab/bench/env"
	"github.com/locklab/locklab/bench/ledger"
	"github.com/locklab/locklab/bench/registry"
	"github.com/locklab/locklab/internal/measure"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram range: 1µs to 60s, 3 significant digits. Values are in µs.
const (
	histMinUs = 1
	histMaxUs = 60_000_000
	histSig   = 3
)

func NewHist() *hdrhistogram.Histogram { return hdrhistogram.New(histMinUs, histMaxUs, histSig) }

// Record adds d (as µs, clamped into the histogram's range) to h.
func Record(h *hdrhistogram.Histogram, d time.Duration) {
	us := d.Microseconds()
	us = min(max(us, histMinUs), histMaxUs)
	_ = h.RecordValue(us)
}

const (
	unlockTimeout  = 5 * time.Second  // each Unlock, which runs on its own context
	barrierTimeout = 10 * time.Second // the ledger's final PING
	errorPause     = time.Millisecond // after a transport error, before retrying
	// attemptsPerOp bounds the Lock calls of a run (give-ups and errors
	// included) at attemptsPerOp x -max-ops, on top of the duration.
	attemptsPerOp = 50
)

// RunSpec is one run: one implementation in one cell.
type RunSpec struct {
	Impl     *registry.Lock
	Cell     Cell
	Round    int
	Duration time.Duration
	MaxOps   int64
	Rate     float64 // open-loop arrivals per second; 0 = closed loop
	TTL      time.Duration
	Tag      string   // unique key prefix of this run
	Addrs    []string // lock servers as the clients dial them (maybe proxied)
	// Group is this worker's group in a bench split across workers
	// (-worker, split.go), nil in a single process; Step is the run's
	// index in the plan, which names its barriers.
	Group *Group
	Step  int
}

// RunResult is what one run measured.
type RunResult struct {
	Spec      RunSpec
	Ops       int64         // acquisitions completed within the run
	Elapsed   time.Duration // from start until the duration passed or -max-ops was reached
	Wait      *hdrhistogram.Histogram
	Release   *hdrhistogram.Histogram
	Handoff   *hdrhistogram.Histogram
	Held      *hdrhistogram.Histogram // from acquired to the start of the release
	cutOff    int64                   // waits cut off by the end of the run, in wait at their length then
	cutMax    time.Duration           // the longest of them
	PerClient []int64                 // acquisitions per client
	gaveUp    int64
	errors    int64 // transport and other failures of Lock and Unlock
	lastErr   string
	// violations counts holders that entered while another was inside.
	violations int64
	// ledgerIncr and ledgerDecr are the violation counter's updates from
	// this process (a worker's: subtracted at the merge, split.go).
	ledgerIncr, ledgerDecr int64
	Cmds                   measure.Commands // server commands (admin and ledger excluded), all servers
	ClientCmds             int64            // commands handed to go-redis; -1 when not measurable
	ServerCPU              time.Duration    // CPU the servers used during the run (the ledger's INCR and DECR included)
	ClientCPU              time.Duration    // CPU this process used during the load; -1 when not measurable (see processCPU)
	leftover               int              // keys without a TTL still present after the run (deleted)
	Expiring               int              // keys with a TTL still present after the run (deleted)
	Fig                    *RoundFigures    // figures(r), once computed

	// Open loop only.
	offered   float64
	due       int64 // arrivals scheduled before the end
	saturated bool
}

// cut records in h a wait of d that the end of the run cut off.
func (r *RunResult) cut(h *hdrhistogram.Histogram, d time.Duration) {
	Record(h, d)
	r.cutOff++
	r.cutMax = max(r.cutMax, d)
}

func (r *RunResult) opsPerSec() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Ops) / r.Elapsed.Seconds()
}

// slot is one lock key of a run and what the handoff measurement needs.
type slot struct {
	key    string // the lock key
	occKey string // the ledger's occupancy counter for it

	mu      sync.Mutex // protects lastRel
	lastRel time.Time  // when the last holder started to release
}

// worker is one contending client.
type worker struct {
	id      int
	con     registry.Contender
	lockers map[string]registry.Locker
	rng     *rand.Rand
	seq     int

	wait, release, handoff, held *hdrhistogram.Histogram
	acquired, gaveUp, errs       int64
	lastErr                      error

	// cutWanted is when the worker started the wait that the end of the
	// run cut off (zero: none).
	cutWanted time.Time
}

// runState is the state shared by the workers of one run.
type runState struct {
	spec  RunSpec
	slots []*slot
	led   *ledger.Ledger
	tally ledger.Tally

	ctx    context.Context
	cancel context.CancelFunc

	endOnce sync.Once
	end     time.Time // set once, by stop

	ops      atomic.Int64 // counted acquisitions
	attempts atomic.Int64 // Lock calls
	next     atomic.Int64 // open loop: next arrival to claim
}

// stop ends the run at the current time (the first call wins).
func (r *runState) stop() {
	r.endOnce.Do(func() {
		r.end = time.Now()
		r.cancel()
	})
}

// Execute performs one run: make the clients, warm them up (each takes and
// releases the lock once, which opens its connections and loads scripts),
// snapshot INFO commandstats, run the load, then snapshot again and clean
// up. Errors that make the figures meaningless are returned.
func Execute(ctx context.Context, srv *env.Servers, led *ledger.Ledger, spec RunSpec) (*RunResult, error) {
	e := registry.Env{Addrs: spec.Addrs, TTL: spec.TTL, Servers: &env.Others, Deployment: srv.Deploy}
	var pipes *registry.Pipeliners // the process's AutoPipeliners, for a Pipelined lock
	if spec.Impl.Pipelined {
		p, err := e.OpenPipeliners(spec.Impl.Nodes)
		if err != nil {
			return nil, err
		}
		defer p.Close()
		pipes, e = p, p.Env
	}
	r := &runState{spec: spec, led: led}
	nslots := max(spec.Cell.Keys, 1)
	for i := range nslots {
		k := spec.Tag + ":k" + strconv.Itoa(i)
		// The ledger's counters live on the first server (on a cluster,
		// in a slot it serves: srv.Tag).
		r.slots = append(r.slots, &slot{key: k, occKey: spec.Tag + ":occ" + strconv.Itoa(i) + srv.Tag})
	}

	// Whatever happens, leave no key behind: the ledger's counters have no
	// TTL. The success path cleans up itself, counting what it finds.
	// In a split bench only worker 1 cleans up, after every worker is done
	// (a sweep in the middle of another worker's run would delete its
	// lock keys from under it).
	g := spec.Group
	lead := g == nil || g.Lead()
	cleaned := false
	defer func() {
		if !cleaned && lead {
			_ = led.Barrier(2 * time.Second) // queued INCRs would recreate a counter
			bg, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, _ = srv.Sweep(bg, "*"+spec.Tag+"*")
		}
	}()

	nclients, firstID := spec.Cell.Clients, 0
	if g != nil {
		nclients, firstID = Share(spec.Cell.Clients, g.I, g.N)
	}
	workers := make([]*worker, nclients)
	defer func() {
		for _, w := range workers {
			if w != nil && w.con.Close != nil {
				_ = w.con.Close()
			}
		}
	}()
	for i := range workers {
		id := firstID + i // the client's index in the cell, across workers
		con, err := spec.Impl.Connect(e)
		if err != nil {
			return nil, fmt.Errorf("connect client %d: %w", id, err)
		}
		workers[i] = &worker{
			id: id, con: con, lockers: map[string]registry.Locker{},
			rng:  rand.New(rand.NewPCG(uint64(spec.Round)+1, uint64(id)+1)),
			wait: NewHist(), release: NewHist(), handoff: NewHist(), held: NewHist(),
		}
	}
	if err := r.warmUp(ctx, workers); err != nil {
		return nil, err
	}
	if g != nil {
		if err := g.Ready(ctx, spec.Step); err != nil {
			return nil, err
		}
	}
	var (
		before    []measure.Commands
		cpuBefore time.Duration
		err       error
	)
	if lead { // the servers' figures: worker 1's, for the whole deployment
		if before, err = srv.Commandstats(ctx); err != nil {
			return nil, err
		}
		if cpuBefore, err = srv.Cpu(ctx); err != nil {
			return nil, err
		}
	}
	if g != nil {
		if err := g.Go(ctx, spec.Step); err != nil {
			return nil, err
		}
	}
	sentBefore := sentTotal(workers, pipes)

	r.ctx, r.cancel = context.WithCancel(ctx)
	defer r.cancel()
	var wg sync.WaitGroup
	startGate := make(chan struct{})
	var start time.Time
	for _, w := range workers {
		wg.Go(func() {
			<-startGate
			if spec.Rate > 0 {
				r.openLoop(w, start)
			} else {
				r.closedLoop(w)
			}
		})
	}
	start = time.Now()
	clientBefore := env.ProcessCPU()
	timer := time.AfterFunc(spec.Duration, r.stop)
	close(startGate)
	wg.Wait()
	clientCPU := env.ProcessCPU() - clientBefore
	if clientBefore < 0 || clientCPU < 0 {
		clientCPU = -1
	}
	timer.Stop()
	r.stop() // no-op unless every worker quit early (attempt bound)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}

	if err := led.Barrier(barrierTimeout); err != nil {
		return nil, err
	}
	sentAfter := sentTotal(workers, pipes)
	for i, w := range workers {
		if err := w.con.Close(); err != nil {
			return nil, fmt.Errorf("close client %d: %w", i, err)
		}
		w.con.Close = nil
	}
	if g != nil {
		if err := g.Done(ctx, spec.Step); err != nil {
			return nil, err
		}
	}
	var after []measure.Commands
	var cpuAfter time.Duration
	if lead {
		if after, err = srv.Commandstats(ctx); err != nil {
			return nil, err
		}
		if cpuAfter, err = srv.Cpu(ctx); err != nil {
			return nil, err
		}
	}

	res := &RunResult{
		Spec: spec, Ops: r.ops.Load(), Elapsed: r.end.Sub(start),
		Wait: NewHist(), Release: NewHist(), Handoff: NewHist(), Held: NewHist(),
		violations: r.tally.Violations.Load(),
		Cmds:       measure.Commands{}, ClientCmds: -1,
		ServerCPU: cpuAfter - cpuBefore, ClientCPU: clientCPU,
	}
	for _, w := range workers {
		if !w.cutWanted.IsZero() && w.cutWanted.Before(r.end) {
			res.cut(w.wait, r.end.Sub(w.cutWanted))
		}
		res.Wait.Merge(w.wait)
		res.Release.Merge(w.release)
		res.Handoff.Merge(w.handoff)
		res.Held.Merge(w.held)
		res.PerClient = append(res.PerClient, w.acquired)
		res.gaveUp += w.gaveUp
		res.errors += w.errs
		if w.lastErr != nil {
			res.lastErr = w.lastErr.Error()
		}
	}
	if sentBefore >= 0 {
		res.ClientCmds = sentAfter - sentBefore
	}
	if nclients == 0 {
		res.Elapsed = 0 // an idle worker: the others' runs give the length
	}
	for i := range after {
		res.Cmds.Add(measure.Delta(before[i], after[i]))
	}
	res.ledgerIncr, res.ledgerDecr = r.tally.Enters.Load(), r.tally.Exits.Load()
	own := measure.Commands{"incr": res.ledgerIncr, "decr": res.ledgerDecr}
	if g != nil {
		// Every worker's counter updates come out at the merge; the
		// barrier's SETs in the window come out here.
		own = measure.Commands{}
		if lead {
			own["set"] = g.windowSets()
		}
	}
	if err := res.Cmds.Subtract(own); err != nil {
		return nil, err
	}
	if n := r.tally.Negative.Load(); n > 0 {
		return nil, fmt.Errorf("ledger: %d exits without an entry: the check itself is broken", n)
	}
	if n := r.tally.Failed.Load(); n > 0 {
		return nil, fmt.Errorf("ledger: %d updates got no reply", n)
	}
	if spec.Rate > 0 {
		res.offered = spec.Rate
		total := r.arrivals()
		res.due = min(total, int64(math.Floor(res.Elapsed.Seconds()*spec.Rate))+1)
		// Saturated: more arrivals due than served, beyond the ones in
		// flight at the end (one per client) and 5% slack (+2).
		backlog := res.due - res.Ops
		res.saturated = backlog > int64(spec.Cell.Clients)+res.due/20+2
		// Arrivals that came due while every client was busy, and that no
		// client claimed before the end, were waiting too.
		for i := r.next.Load(); i < total; i++ {
			due := start.Add(r.arrival(i))
			if !due.Before(r.end) {
				break
			}
			res.cut(res.Wait, r.end.Sub(due))
		}
	}

	if !lead {
		cleaned = true // worker 1 cleans up
		return res, nil
	}
	// Clean up: the occupancy counters, then any key the lock left behind.
	occ := make([]string, len(r.slots))
	for i, s := range r.slots {
		occ[i] = s.occKey
	}
	if err := srv.Admin[0].Del(ctx, occ...).Err(); err != nil {
		return nil, fmt.Errorf("delete ledger keys: %w", err)
	}
	left, expiring, err := srv.SweepTTL(ctx, "*"+spec.Tag+"*")
	if err != nil {
		return nil, err
	}
	if g != nil {
		if err := g.Clear(ctx, spec.Step); err != nil {
			return nil, err
		}
	}
	cleaned = true
	if !spec.Impl.KeepsKeys {
		res.leftover, res.Expiring = left-expiring, expiring
	}
	return res, nil
}

// sentTotal sums the workers' go-redis command counters and the shared
// AutoPipeliners' (pipes, nil for a lock on its own clients), or returns
// -1 when a client has none.
func sentTotal(ws []*worker, pipes *registry.Pipeliners) int64 {
	var n int64
	if pipes != nil {
		n += pipes.Sent.Load()
	}
	for _, w := range ws {
		if w.con.Sent == nil {
			return -1
		}
		n += w.con.Sent.Load()
	}
	return n
}

// warmUp has every client take and release the lock once, one after the
// other, so connections are open and scripts loaded before measuring.
func (r *runState) warmUp(ctx context.Context, ws []*worker) error {
	ctx, cancel := context.WithTimeout(ctx, env.WarmupTimeout)
	defer cancel()
	key := r.slots[0].key
	if r.spec.Cell.Keys == 0 {
		key = r.spec.Tag + ":warm"
	}
	for _, w := range ws {
		l := w.con.Locker(key)
		if err := l.Lock(ctx); err != nil {
			return fmt.Errorf("warm-up: client %d: Lock: %w", w.id, err)
		}
		if err := l.Unlock(ctx); err != nil {
			return fmt.Errorf("warm-up: client %d: Unlock: %w", w.id, err)
		}
	}
	return nil
}

// pick returns the slot and locker for the worker's next acquisition: a
// fresh key each time (uncontended), the one key (contended), or a
// uniformly random one of K (keys).
func (r *runState) pick(w *worker) (*slot, registry.Locker) {
	switch r.spec.Cell.Keys {
	case 0:
		w.seq++
		key := r.spec.Tag + ":u" + strconv.Itoa(w.id) + ":" + strconv.Itoa(w.seq)
		return r.slots[0], w.con.Locker(key)
	case 1:
		return r.slots[0], w.locker(r.slots[0].key)
	default:
		s := r.slots[w.rng.IntN(len(r.slots))]
		return s, w.locker(s.key)
	}
}

func (w *worker) locker(key string) registry.Locker {
	l, ok := w.lockers[key]
	if !ok {
		l = w.con.Locker(key)
		w.lockers[key] = l
	}
	return l
}

// closedLoop: want the lock, hold it, release it, again, until the run ends.
func (r *runState) closedLoop(w *worker) {
	for r.ctx.Err() == nil {
		if !r.once(w, time.Now()) {
			return
		}
	}
}

// arrivals is the open loop's schedule length: -rate x -duration arrivals,
// at most -max-ops.
func (r *runState) arrivals() int64 {
	return min(int64(math.Ceil(r.spec.Rate*r.spec.Duration.Seconds())), r.spec.MaxOps)
}

// arrival returns when arrival i is due, counted from the run's start.
func (r *runState) arrival(i int64) time.Duration {
	return time.Duration(float64(i) * float64(time.Second) / r.spec.Rate)
}

// openLoop serves arrivals scheduled at start + i/rate. Each worker claims
// the next arrival, sleeps until it is due, and measures the wait from the
// scheduled time, so an arrival that found every worker busy is charged
// for the queueing too (no coordinated omission).
func (r *runState) openLoop(w *worker, start time.Time) {
	total := r.arrivals()
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		i := r.next.Add(1) - 1
		if i >= total {
			return
		}
		due := start.Add(r.arrival(i))
		if d := time.Until(due); d > 0 {
			t.Reset(d)
			select {
			case <-r.ctx.Done():
				return
			case <-t.C:
			}
		}
		if r.ctx.Err() != nil {
			w.cutWanted = due // a wait if it was due before the end
			return
		}
		if !r.once(w, due) {
			return
		}
	}
}

// once acquires, holds and releases one lock for w, whose wait started at
// wanted. A Lock that gives up is counted and retried with the same wanted
// time. A wait cut off by the end of the run is not an acquisition, but
// goes into the wait figures at its length when the run ended (a lower
// bound), recorded by execute: leaving it out would drop exactly the
// longest waits, such as a client that waited the whole run. It reports
// whether the run goes on.
func (r *runState) once(w *worker, wanted time.Time) bool {
	s, l := r.pick(w)
	for {
		if r.attempts.Add(1) > attemptsPerOp*r.spec.MaxOps {
			r.stop()
			w.cutWanted = wanted
			return false
		}
		err := l.Lock(r.ctx)
		if err == nil {
			break
		}
		if r.ctx.Err() != nil {
			w.cutWanted = wanted
			return false
		}
		if r.spec.Impl.GaveUp(err) {
			w.gaveUp++
			continue
		}
		w.errs++
		w.lastErr = fmt.Errorf("Lock: %w", err)
		if !env.SleepCtx(r.ctx, errorPause) {
			w.cutWanted = wanted
			return false
		}
	}
	got := time.Now()
	r.led.Enter(&r.tally, s.occKey)
	counted := r.ctx.Err() == nil
	if !counted {
		w.cutWanted = wanted // it ended only after the run did
	} else {
		Record(w.wait, got.Sub(wanted))
		if r.spec.Cell.Keys > 0 {
			s.mu.Lock()
			rel := s.lastRel
			s.mu.Unlock()
			if !rel.IsZero() && wanted.Before(rel) && got.After(rel) {
				Record(w.handoff, got.Sub(rel))
			}
		}
		w.acquired++
	}
	if h := r.spec.Cell.Hold; h > 0 {
		env.HoldFor(h, r.spec.Cell.HoldsOverlap())
	}
	r.led.Exit(&r.tally, s.occKey)
	rel := time.Now()
	if counted {
		Record(w.held, rel.Sub(got))
	}
	s.mu.Lock()
	s.lastRel = rel
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), unlockTimeout)
	err := l.Unlock(ctx)
	cancel()
	Record(w.release, time.Since(rel))
	if err != nil {
		w.errs++
		w.lastErr = fmt.Errorf("Unlock: %w", err)
	}
	if counted && r.ops.Add(1) >= r.spec.MaxOps {
		r.stop()
	}
	return r.ctx.Err() == nil
}

// ledgers are the violation counters of a run with -server: one per kind
// of server, on its first server, so that a lock's server figures
// (commandstats, CPU) include the counter's INCR and DECR on every kind
// alike.
type ledgers struct {
	srv  []*env.Servers
	leds []*ledger.Ledger
}

// DialLedgers dials a ledger on the first server of srv and of each of
// srv.also.
func DialLedgers(srv *env.Servers, syncMode bool) (*ledgers, error) {
	l := &ledgers{}
	for _, s := range append([]*env.Servers{srv}, srv.Also...) {
		led, err := ledger.Dial(s.Addrs[0], syncMode)
		if err != nil {
			l.Close()
			return nil, err
		}
		l.srv, l.leds = append(l.srv, s), append(l.leds, led)
	}
	return l, nil
}

// Of returns the servers of kind and their ledger; the first kind's for
// a kind it does not have.
func (l *ledgers) Of(kind string) (*env.Servers, *ledger.Ledger) {
	for i, s := range l.srv {
		if s.Kind == kind {
			return s, l.leds[i]
		}
	}
	return l.srv[0], l.leds[0]
}

func (l *ledgers) Close() {
	for _, led := range l.leds {
		_ = led.Close()
	}
}
