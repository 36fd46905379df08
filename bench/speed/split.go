package speed

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locklab/locklab/bench/env"
	"github.com/locklab/locklab/internal/measure"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/redis/go-redis/v9"
)

// A bench split across workers (-worker i/N, issue 39): N processes, each
// started by whatever starts them (Compose, SSH, a Kubernetes Job), run the
// same plan in the same order against the same servers, each with its share
// of every cell's clients (Share), on the same keys (named from the shared
// -run-id). Before and after each run they meet at a barrier kept in the
// first server (Group), so their loads overlap; each writes a segment, and
// `bench merge` adds the segments up into the report a single process
// would have written (MergeRuns).
//
// The server-side figures (INFO commandstats and cpu) are the deployment's,
// not a worker's: worker 1 takes them, before it lets the others start and
// after every worker has reported done, and it alone cleans up each run's
// keys, once every worker is done with them.

// Share returns the clients worker i (1..n) runs of a cell's clients, and
// the global index of its first client: the clients split as evenly as
// possible, the first clients%n workers one more. A worker whose share is
// 0 (a cell with fewer clients than workers, such as uncontended's one
// client) runs no client but still meets the run's barriers.
func Share(clients, i, n int) (count, first int) {
	base, extra := clients/n, clients%n
	count = base
	if i <= extra {
		count++
	}
	first = (i-1)*base + min(i-1, extra)
	return count, first
}

// ParseWorker parses -worker's "i/N" (1 <= i <= N).
func ParseWorker(s string) (i, n int, err error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), "/")
	if ok {
		i, err = strconv.Atoi(a)
		if err == nil {
			n, err = strconv.Atoi(b)
		}
	}
	if !ok || err != nil {
		return 0, 0, fmt.Errorf("-worker: %q is not i/N (e.g. 2/3: the second of three workers)", s)
	}
	if n < 1 || i < 1 || i > n {
		return 0, 0, fmt.Errorf("-worker %s: want 1 <= i <= N and N >= 1", s)
	}
	return i, n, nil
}

// DefaultBarrierTimeout bounds each wait at a barrier: for every worker to
// be ready before a run (the first one waits for the slowest worker to
// start, -start aside), and for every worker to be done after it.
const DefaultBarrierTimeout = 2 * time.Minute

// Group is this worker's view of the workers of one split bench and of the
// barrier keys they share on the first server.
type Group struct {
	I, N    int
	RunID   string
	Timeout time.Duration // each barrier wait
	// Tag is a hash tag of a slot the first server serves ("{7}"), in
	// every barrier key: on a Redis Cluster (env.Servers.Tag) the keys
	// must live on the primary the admin client talks to, or each SET
	// answers MOVED. Empty on plain servers.
	Tag   string
	admin *redis.Client
	mine  []string // the barrier keys this worker set (Abandon)
}

// NewGroup returns worker i of n's group, its barriers on admin's server.
func NewGroup(i, n int, runID string, timeout time.Duration, admin *redis.Client) *Group {
	return &Group{I: i, N: n, RunID: runID, Timeout: timeout, admin: admin}
}

// Lead reports whether this worker is worker 1, which measures the servers
// and cleans up.
func (g *Group) Lead() bool { return g.I == 1 }

// KeyPrefix is the root of the group's barrier keys. It is under the
// bench's KeyRoot (a leftover sweep finds them) but apart from the runs'
// own keys (KeyRoot+RunID+":"+step), so no run's sweep touches it.
func (g *Group) KeyPrefix() string { return env.KeyRoot + g.RunID + ":sync" + g.Tag + ":" }

func (g *Group) key(step int, stage string, worker int) string {
	k := g.KeyPrefix() + strconv.Itoa(step) + ":" + stage
	if worker > 0 {
		k += ":w" + strconv.Itoa(worker)
	}
	return k
}

// barrierTTL keeps a dead group's barrier keys from staying forever.
const barrierTTL = 30 * time.Minute

// arrive marks this worker's arrival at stage of step: one SET NX, counted
// in INFO commandstats (windowSets says how many fall inside worker 1's
// measurement, which takes them out). A key already there means a worker
// started twice, or a run id used again after a run that failed.
func (g *Group) arrive(ctx context.Context, step int, stage string, worker int) error {
	k := g.key(step, stage, worker)
	ok, err := g.admin.SetNX(ctx, k, "1", barrierTTL).Result()
	if err != nil {
		return fmt.Errorf("barrier %s of run %d: SET: %w", stage, step+1, err)
	}
	if !ok {
		return fmt.Errorf("barrier %s of run %d: %s is already set: worker %d of run id %s started twice, or the run id was used by a run that failed (pick a new -run-id, or delete %s* after %s)",
			stage, step+1, k, g.I, g.RunID, env.KeyRoot+g.RunID+":", barrierTTL)
	}
	g.mine = append(g.mine, k)
	return nil
}

// await waits until the stage's keys of every worker in want are there, or
// fails after g.Timeout naming the workers that did not come. It polls
// with SCAN, an admin command that INFO commandstats figures leave out, so
// the polls do not count as the lock's commands (their server CPU does).
func (g *Group) await(ctx context.Context, step int, stage string, want []int) error {
	deadline := time.Now().Add(g.Timeout)
	pattern := g.key(step, stage, 0) + "*"
	pause := 200 * time.Microsecond
	for {
		seen := map[int]bool{}
		var cursor uint64
		for iter := 0; ; iter++ {
			if iter > 100_000 {
				return fmt.Errorf("barrier %s of run %d: SCAN did not finish", stage, step+1)
			}
			keys, next, err := g.admin.Scan(ctx, cursor, pattern, 1000).Result()
			if err != nil {
				return fmt.Errorf("barrier %s of run %d: SCAN: %w", stage, step+1, err)
			}
			for _, k := range keys {
				_, w, _ := strings.Cut(strings.TrimPrefix(k, g.key(step, stage, 0)), ":w")
				if n, err := strconv.Atoi(w); err == nil {
					seen[n] = true
				} else if k == g.key(step, stage, 0) {
					seen[0] = true
				}
			}
			if cursor = next; cursor == 0 {
				break
			}
		}
		var missing []string
		for _, w := range want {
			if !seen[w] {
				missing = append(missing, strconv.Itoa(w))
			}
		}
		if len(missing) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			what := "worker"
			if len(missing) > 1 {
				what = "workers"
			}
			return fmt.Errorf("barrier %s of run %d (run id %s): %s %s of %d did not come within %s",
				stage, step+1, g.RunID, what, strings.Join(missing, ", "), g.N, g.Timeout)
		}
		if !env.SleepCtx(ctx, pause) {
			return ctx.Err()
		}
		pause = min(2*pause, time.Millisecond)
	}
}

func (g *Group) all() []int {
	out := make([]int, g.N)
	for i := range out {
		out[i] = i + 1
	}
	return out
}

// Ready: every worker has its clients connected and warmed up for step.
func (g *Group) Ready(ctx context.Context, step int) error {
	if err := g.arrive(ctx, step, "ready", g.I); err != nil {
		return err
	}
	return g.await(ctx, step, "ready", g.all())
}

// Go: worker 1 has taken its "before" figures; the load starts. Worker 1
// posts it, the others wait for it.
func (g *Group) Go(ctx context.Context, step int) error {
	if g.Lead() {
		return g.arrive(ctx, step, "go", 0)
	}
	return g.await(ctx, step, "go", []int{0})
}

// Done: this worker's load is over and its clients are closed. Worker 1
// waits for every worker's, then takes its "after" figures and cleans up;
// the others go on to the next run.
func (g *Group) Done(ctx context.Context, step int) error {
	if err := g.arrive(ctx, step, "done", g.I); err != nil {
		return err
	}
	if !g.Lead() {
		return nil
	}
	return g.await(ctx, step, "done", g.all())
}

// windowSets is how many barrier SETs land between worker 1's two
// commandstats snapshots of a run: its own "go" and every worker's "done".
func (g *Group) windowSets() int64 { return int64(g.N) + 1 }

// Clear deletes step's barrier keys: worker 1 calls it once every worker
// is done with step, when no one waits at its barriers any more.
func (g *Group) Clear(ctx context.Context, step int) error {
	keys := []string{g.key(step, "go", 0)}
	for _, w := range g.all() {
		keys = append(keys, g.key(step, "ready", w), g.key(step, "done", w))
	}
	if err := g.admin.Del(ctx, keys...).Err(); err != nil {
		return fmt.Errorf("delete the barrier keys of run %d: %w", step+1, err)
	}
	return nil
}

// Sweep deletes every barrier key of the group: worker 1 calls it after
// the last run, when every worker is past its last barrier.
func (g *Group) Sweep(ctx context.Context) error { return g.sweep(ctx, g.KeyPrefix()+"*") }

// Abandon deletes the barrier keys this worker set (not another's, such
// as those of the same worker started twice), when it fails: the run is
// over for the others as well, who will fail at a barrier naming it.
func (g *Group) Abandon(ctx context.Context) error {
	if len(g.mine) == 0 {
		return nil
	}
	if err := g.admin.Del(ctx, g.mine...).Err(); err != nil {
		return fmt.Errorf("delete worker %d's barrier keys: %w", g.I, err)
	}
	return nil
}

func (g *Group) sweep(ctx context.Context, pattern string) error {
	var cursor uint64
	for iter := 0; ; iter++ {
		if iter > 100_000 {
			return errors.New("barrier sweep: SCAN did not finish")
		}
		keys, next, err := g.admin.Scan(ctx, cursor, pattern, 1000).Result()
		if err != nil {
			return fmt.Errorf("barrier sweep: SCAN: %w", err)
		}
		if len(keys) > 0 {
			if err := g.admin.Del(ctx, keys...).Err(); err != nil {
				return fmt.Errorf("barrier sweep: DEL: %w", err)
			}
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}

// Hist is a histogram in a segment file: its geometry and its non-zero
// counts by index (a full counts array is some 200 kB of zeros).
type Hist struct {
	Lowest  int64      `json:"lowest"`
	Highest int64      `json:"highest"`
	Sig     int64      `json:"sig"`
	Counts  [][2]int64 `json:"counts"` // [index, count]
}

// ExportHist snapshots h (hdrhistogram's Export) for a segment.
func ExportHist(h *hdrhistogram.Histogram) Hist {
	s := h.Export()
	out := Hist{Lowest: s.LowestTrackableValue, Highest: s.HighestTrackableValue, Sig: s.SignificantFigures, Counts: [][2]int64{}}
	for i, c := range s.Counts {
		if c != 0 {
			out.Counts = append(out.Counts, [2]int64{int64(i), c})
		}
	}
	return out
}

// Import rebuilds the histogram (hdrhistogram's Import).
func (h Hist) Import() (*hdrhistogram.Histogram, error) {
	if h.Lowest != histMinUs || h.Highest != histMaxUs || h.Sig != histSig {
		return nil, fmt.Errorf("histogram range %d..%d, %d digits; want %d..%d, %d", h.Lowest, h.Highest, h.Sig, histMinUs, histMaxUs, histSig)
	}
	n := int64(len(NewHist().Export().Counts))
	counts := make([]int64, n)
	for _, ic := range h.Counts {
		if ic[0] < 0 || ic[0] >= n || ic[1] < 0 {
			return nil, fmt.Errorf("histogram count %v out of range", ic)
		}
		counts[ic[0]] = ic[1]
	}
	return hdrhistogram.Import(&hdrhistogram.Snapshot{LowestTrackableValue: h.Lowest, HighestTrackableValue: h.Highest, SignificantFigures: h.Sig, Counts: counts}), nil
}

// SegmentRun is what one worker measured of one run, as its segment file
// keeps it.
type SegmentRun struct {
	Step      int   `json:"step"` // index in the plan
	Clients   int   `json:"clients"`
	Ops       int64 `json:"ops"`
	ElapsedNs int64 `json:"elapsed_ns"` // this worker's wall clock of the load (0 with no client)
	Wait      Hist  `json:"wait"`
	Release   Hist  `json:"release"`
	Handoff   Hist  `json:"handoff"`
	Held      Hist  `json:"held"`
	CutOff    int64 `json:"cut_off"`
	CutMaxNs  int64 `json:"cut_off_max_ns"`
	// PerClient are the acquisitions of this worker's clients, in global
	// client order (the first is client Share(...).first).
	PerClient  []int64 `json:"per_client"`
	GaveUp     int64   `json:"gave_up"`
	Errors     int64   `json:"errors"`
	LastErr    string  `json:"last_error,omitempty"`
	Violations int64   `json:"violations"`
	// LedgerIncr and LedgerDecr are this worker's violation-counter
	// updates, taken out of worker 1's command counts at the merge.
	LedgerIncr int64 `json:"ledger_incr"`
	LedgerDecr int64 `json:"ledger_decr"`
	ClientCmds int64 `json:"client_cmds"`   // -1: not measurable
	ClientCPU  int64 `json:"client_cpu_ns"` // this process; -1: not measurable
	// Worker 1 only: the servers' figures over the run (barrier SETs taken
	// out, ledger updates still in), and what its cleanup found.
	Cmds      measure.Commands `json:"server_cmds,omitempty"`
	ServerCPU int64            `json:"server_cpu_ns,omitempty"`
	Leftover  int              `json:"leftover_keys,omitempty"`
	Expiring  int              `json:"expiring_keys,omitempty"`
}

// Segment returns r as a segment's record of step.
func (r *RunResult) Segment(step int) SegmentRun {
	return SegmentRun{
		Step: step, Clients: len(r.PerClient), Ops: r.Ops, ElapsedNs: int64(r.Elapsed),
		Wait: ExportHist(r.Wait), Release: ExportHist(r.Release), Handoff: ExportHist(r.Handoff), Held: ExportHist(r.Held),
		CutOff: r.cutOff, CutMaxNs: int64(r.cutMax), PerClient: slices.Clone(r.PerClient),
		GaveUp: r.gaveUp, Errors: r.errors, LastErr: r.lastErr, Violations: r.violations,
		LedgerIncr: r.ledgerIncr, LedgerDecr: r.ledgerDecr, ClientCmds: r.ClientCmds, ClientCPU: int64(r.ClientCPU),
		Cmds: r.Cmds, ServerCPU: int64(r.ServerCPU), Leftover: r.leftover, Expiring: r.Expiring,
	}
}

// MergeRuns adds up the workers' records of one run (segs[0] worker 1's,
// then in worker order) into the run a single process would have returned:
// counts summed, histograms merged, per-client counts side by side, the
// run's length the longest worker's, the server figures worker 1's less
// every worker's violation-counter updates.
func MergeRuns(spec RunSpec, segs []SegmentRun) (*RunResult, error) {
	res := &RunResult{Spec: spec, Wait: NewHist(), Release: NewHist(), Handoff: NewHist(), Held: NewHist(), Cmds: measure.Commands{}}
	own := measure.Commands{}
	clients := 0
	for w, s := range segs {
		if s.Clients != len(s.PerClient) {
			return nil, fmt.Errorf("worker %d: %d clients but %d per-client counts", w+1, s.Clients, len(s.PerClient))
		}
		clients += s.Clients
		for _, p := range []struct {
			into *hdrhistogram.Histogram
			from Hist
		}{{res.Wait, s.Wait}, {res.Release, s.Release}, {res.Handoff, s.Handoff}, {res.Held, s.Held}} {
			h, err := p.from.Import()
			if err != nil {
				return nil, fmt.Errorf("worker %d: %w", w+1, err)
			}
			p.into.Merge(h)
		}
		res.Ops += s.Ops
		res.Elapsed = max(res.Elapsed, time.Duration(s.ElapsedNs))
		res.cutOff += s.CutOff
		res.cutMax = max(res.cutMax, time.Duration(s.CutMaxNs))
		res.PerClient = append(res.PerClient, s.PerClient...)
		res.gaveUp += s.GaveUp
		res.errors += s.Errors
		if s.LastErr != "" {
			res.lastErr = fmt.Sprintf("worker %d: %s", w+1, s.LastErr)
		}
		res.violations += s.Violations
		res.ledgerIncr += s.LedgerIncr
		res.ledgerDecr += s.LedgerDecr
		own.Add(measure.Commands{"incr": s.LedgerIncr, "decr": s.LedgerDecr})
		if res.ClientCmds >= 0 && s.ClientCmds >= 0 {
			res.ClientCmds += s.ClientCmds
		} else {
			res.ClientCmds = -1
		}
		if res.ClientCPU >= 0 && s.ClientCPU >= 0 {
			res.ClientCPU += time.Duration(s.ClientCPU)
		} else {
			res.ClientCPU = -1
		}
	}
	if clients != spec.Cell.Clients {
		return nil, fmt.Errorf("the workers ran %d clients; the cell has %d", clients, spec.Cell.Clients)
	}
	lead := segs[0]
	res.Cmds.Add(lead.Cmds)
	if err := res.Cmds.Subtract(own); err != nil {
		return nil, fmt.Errorf("server commands less the violation counter's: %w", err)
	}
	res.ServerCPU = time.Duration(lead.ServerCPU)
	res.leftover, res.Expiring = lead.Leftover, lead.Expiring
	return res, nil
}
