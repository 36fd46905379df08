package main

// A bench split across workers (issue 39): -worker i/N -run-id ID makes
// this process one of N that run the same plan against the same -addrs,
// each with its share of every cell's clients, in lockstep (barriers on
// the first server, speed.Group), each writing a segment; `bench merge`
// adds the segments up into one report. Nothing here starts the workers:
// Compose, SSH or Kubernetes Jobs do.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/locklab/locklab/bench/env"
	"github.com/locklab/locklab/bench/faults"
	"github.com/locklab/locklab/bench/registry"
	"github.com/locklab/locklab/bench/report"
	"github.com/locklab/locklab/bench/speed"
)

// segmentFile is the file a worker writes into its -out directory.
const segmentFile = "segment.json"

// segmentFormat names the segment file's layout.
const segmentFormat = "locklab-bench-segment/1"

// runIDPattern: the run id is in key names and SCAN patterns, so no glob
// characters.
var runIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// maxStartAhead bounds how far in the future -start may be.
const maxStartAhead = 24 * time.Hour

type workerFlags struct {
	worker, runID, start *string
	barrier              *time.Duration
}

func addWorkerFlags(fs *flag.FlagSet) workerFlags {
	return workerFlags{
		worker: fs.String("worker", "", "split the bench: this process is worker `i/N` (e.g. 2/3) and runs its share of every cell's clients\n"+
			"(as even as can be; a worker with none still meets the barriers) against the shared -addrs, with -run-id;\n"+
			"it writes segment.json to -out, and `go run ./bench merge DIR...` makes the report of all N"),
		runID: fs.String("run-id", "", "with -worker: the `id` every worker of the run is given, which names the shared keys ([A-Za-z0-9_-], new for each run)"),
		start: fs.String("start", "", "with -worker: the `time` (RFC3339) every worker begins at; each run also waits at a barrier until every worker is ready"),
		barrier: fs.Duration("barrier-timeout", speed.DefaultBarrierTimeout,
			"with -worker: how long a worker waits at a barrier for the others before it fails, naming the missing workers"),
	}
}

// apply checks the worker flags against the rest and sets them in c.
func (wf workerFlags) apply(c *speed.Config, set map[string]bool) error {
	if !set["worker"] {
		for _, f := range []string{"run-id", "start", "barrier-timeout"} {
			if set[f] {
				return fmt.Errorf("-%s is for a split bench: give -worker i/N too", f)
			}
		}
		return nil
	}
	var err error
	if c.Worker, c.Workers, err = speed.ParseWorker(*wf.worker); err != nil {
		return err
	}
	switch {
	case *wf.runID == "":
		return errors.New("-worker needs -run-id: the same id for every worker of the run (it names the keys they share)")
	case !runIDPattern.MatchString(*wf.runID):
		return fmt.Errorf("-run-id %q: use 1 to 64 of A-Z a-z 0-9 _ -", *wf.runID)
	case len(c.Addrs) == 0 && !set["addrs"]:
		return errors.New("-worker needs -addrs: the workers share one deployment (each would start its own servers from the rig)")
	case slices.Contains(c.Scenarios, faults.ScFaults):
		return errors.New("-worker with -scenarios faults: the fault scoreboard is not split across workers; run it in one process")
	case c.Rate > 0:
		return errors.New("-worker with -rate: the open loop's arrival schedule is not split across workers; run it in one process")
	case set["check"] && c.Check != "sync":
		return errors.New("-worker with -check async: the violation counter is shared by the workers, and only -check sync orders one worker's exit before another's entry")
	case *wf.barrier <= 0:
		return fmt.Errorf("-barrier-timeout must be > 0, got %v", *wf.barrier)
	}
	c.RunID, c.BarrierTimeout = *wf.runID, *wf.barrier
	c.Check = "sync" // each update answered before Unlock, so workers' updates are ordered too
	if *wf.start != "" {
		if c.Start, err = time.Parse(time.RFC3339, *wf.start); err != nil {
			return fmt.Errorf("-start %q: want RFC3339, e.g. 2026-12-07T03:00:00Z", *wf.start)
		}
		if time.Until(c.Start) > maxStartAhead {
			return fmt.Errorf("-start %s is more than %s ahead", *wf.start, maxStartAhead)
		}
	}
	return nil
}

// checkWorkerImpls refuses, in a split bench, the locks on etcd, ZooKeeper
// and PostgreSQL: each worker would start its own server for them.
func checkWorkerImpls(c *speed.Config, impls []*registry.Lock) error {
	if c.Workers == 0 {
		return nil
	}
	var other []string
	for _, im := range impls {
		if registry.SystemOf(im) != registry.SysRedis {
			other = append(other, im.Name)
		}
	}
	if len(other) > 0 {
		return fmt.Errorf("-worker: %s run on servers each worker would start for itself (not split); leave them out of -impls", strings.Join(other, ", "))
	}
	return nil
}

// startWorker waits for -start and returns the worker's group.
func startWorker(ctx context.Context, c *speed.Config, srv *env.Servers, stderr io.Writer) (*speed.Group, error) {
	if d := time.Until(c.Start); !c.Start.IsZero() && d > 0 {
		fmt.Fprintf(stderr, "bench: worker %d/%d waits until %s (%s)\n", c.Worker, c.Workers, c.Start.Format(time.RFC3339), d.Round(time.Second))
		if !env.SleepCtx(ctx, d) {
			return nil, ctx.Err()
		}
	}
	fmt.Fprintf(stderr, "bench: worker %d/%d of run id %s\n", c.Worker, c.Workers, c.RunID)
	g := speed.NewGroup(c.Worker, c.Workers, c.RunID, c.BarrierTimeout, srv.Admin[0])
	g.Tag = srv.Tag // a cluster's first primary's slot (env.StartDeployed)
	return g, nil
}

// segment is what a worker writes: its plan, and what it measured of each
// run, in plan order.
type segment struct {
	Format  string             `json:"format"`
	RunID   string             `json:"run_id"`
	Worker  int                `json:"worker"`
	Workers int                `json:"workers"`
	Plan    segmentPlan        `json:"plan"`
	Machine report.Machine     `json:"machine"` // this worker's; worker 1's has the servers'
	Runs    []speed.SegmentRun `json:"runs"`
}

// segmentPlan is what every worker must agree on.
type segmentPlan struct {
	Config speed.Config `json:"config"` // with what may differ per worker cleared (planConfig)
	Cells  []speed.Cell `json:"cells"`
	Impls  []string     `json:"impls"`
	Steps  []string     `json:"steps"` // "round/cell/impl", in order
}

// planConfig clears what may differ between workers of one run: where
// they write, how they reach the servers, their profiles and timeouts.
func planConfig(c *speed.Config) speed.Config {
	p := *c
	p.Out, p.Cpuprof, p.Worker, p.Addrs, p.Start, p.BarrierTimeout, p.Plots = "", "", 0, nil, time.Time{}, 0, false
	return p
}

func newPlan(c *speed.Config, cs []speed.Cell, impls []*registry.Lock, plan []speed.Step) segmentPlan {
	p := segmentPlan{Config: planConfig(c), Cells: cs, Impls: implNames(impls)}
	for _, s := range plan {
		p.Steps = append(p.Steps, fmt.Sprintf("%d/%s/%s", s.Round, s.Cell, s.Impl.Name))
	}
	return p
}

// writeSegment writes the worker's segment file; worker 1 also sweeps the
// barrier keys, every worker being past its last barrier by then.
func writeSegment(ctx context.Context, dir string, c *speed.Config, g *speed.Group, mach report.Machine, cs []speed.Cell, impls []*registry.Lock, plan []speed.Step, runs []*speed.RunResult) error {
	if g.Lead() {
		if err := g.Sweep(ctx); err != nil {
			return err
		}
	}
	seg := segment{Format: segmentFormat, RunID: c.RunID, Worker: c.Worker, Workers: c.Workers,
		Plan: newPlan(c, cs, impls, plan), Machine: mach}
	for i, r := range runs {
		seg.Runs = append(seg.Runs, r.Segment(i))
	}
	return report.WriteJSON(filepath.Join(dir, segmentFile), seg)
}

// readSegment reads dir's segment file.
func readSegment(dir string) (*segment, error) {
	b, err := os.ReadFile(filepath.Join(dir, segmentFile))
	if err != nil {
		return nil, fmt.Errorf("merge: %w (a -worker run writes %s into its -out)", err, segmentFile)
	}
	var s segment
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("merge: %s: %w", filepath.Join(dir, segmentFile), err)
	}
	if s.Format != segmentFormat {
		return nil, fmt.Errorf("merge: %s: format %q; want %q", filepath.Join(dir, segmentFile), s.Format, segmentFormat)
	}
	if s.Workers < 1 || s.Worker < 1 || s.Worker > s.Workers {
		return nil, fmt.Errorf("merge: %s: worker %d of %d", filepath.Join(dir, segmentFile), s.Worker, s.Workers)
	}
	if len(s.Runs) != len(s.Plan.Steps) {
		return nil, fmt.Errorf("merge: %s: %d runs for a plan of %d (the worker did not finish)", filepath.Join(dir, segmentFile), len(s.Runs), len(s.Plan.Steps))
	}
	return &s, nil
}

// loadSegments reads the segments in dirs and checks that they are the N
// workers of one run, each once, on one plan; it returns them in worker
// order.
func loadSegments(dirs []string) ([]*segment, error) {
	if len(dirs) == 0 {
		return nil, errors.New("merge: no segment directories given; usage: go run ./bench merge [-out DIR] DIR...")
	}
	var segs []*segment
	from := map[int]string{} // worker -> dir
	for _, d := range dirs {
		s, err := readSegment(d)
		if err != nil {
			return nil, err
		}
		if len(segs) > 0 {
			first := segs[0]
			if s.RunID != first.RunID {
				return nil, fmt.Errorf("merge: %s is of run id %s, %s of run id %s: segments of different runs", d, s.RunID, dirs[0], first.RunID)
			}
			if s.Workers != first.Workers {
				return nil, fmt.Errorf("merge: %s is worker %d of %d, %s worker %d of %d", d, s.Worker, s.Workers, dirs[0], first.Worker, first.Workers)
			}
			if err := samePlan(first.Plan, s.Plan); err != nil {
				return nil, fmt.Errorf("merge: the plan of worker %d (%s) differs from worker %d's (%s): %w", s.Worker, d, first.Worker, dirs[0], err)
			}
		}
		if prev, dup := from[s.Worker]; dup {
			return nil, fmt.Errorf("merge: worker %d of run id %s given twice: %s and %s", s.Worker, s.RunID, prev, d)
		}
		from[s.Worker] = d
		segs = append(segs, s)
	}
	n := segs[0].Workers
	var missing []string
	for i := 1; i <= n; i++ {
		if _, ok := from[i]; !ok {
			missing = append(missing, fmt.Sprint(i))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("merge: run id %s: missing the segment of worker %s of %d", segs[0].RunID, strings.Join(missing, ", "), n)
	}
	slices.SortFunc(segs, func(a, b *segment) int { return a.Worker - b.Worker })
	return segs, nil
}

// samePlan says where two plans differ, if they do.
func samePlan(a, b segmentPlan) error {
	ja, _ := json.Marshal(a.Config)
	jb, _ := json.Marshal(b.Config)
	if string(ja) != string(jb) {
		return fmt.Errorf("settings %s vs %s", ja, jb)
	}
	if !slices.Equal(a.Impls, b.Impls) {
		return fmt.Errorf("impls %v vs %v", a.Impls, b.Impls)
	}
	if !slices.Equal(a.Cells, b.Cells) {
		return fmt.Errorf("cells %v vs %v", a.Cells, b.Cells)
	}
	for i := range max(len(a.Steps), len(b.Steps)) {
		if i >= len(a.Steps) || i >= len(b.Steps) || a.Steps[i] != b.Steps[i] {
			return fmt.Errorf("run %d: %q vs %q (of %d and %d runs)", i+1, at(a.Steps, i), at(b.Steps, i), len(a.Steps), len(b.Steps))
		}
	}
	return nil
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return "(none)"
}

// mergeResults rebuilds, from the segments, the results a single process
// would have had: the same config, cells, locks and runs.
func mergeResults(segs []*segment) (*speed.Config, report.Machine, []speed.Cell, []*registry.Lock, []*speed.RunResult, error) {
	lead := segs[0]
	cfg := lead.Plan.Config
	cfg.Plots = true
	var impls []*registry.Lock
	for _, name := range lead.Plan.Impls {
		im, ok := registry.Locks[name]
		if !ok {
			return nil, report.Machine{}, nil, nil, nil, fmt.Errorf("merge: the segments name lock %q, which this bench does not know", name)
		}
		impls = append(impls, im)
	}
	plan := speed.Steps(cfg.Rounds, lead.Plan.Cells, impls)
	if got := newPlan(&cfg, lead.Plan.Cells, impls, plan).Steps; !slices.Equal(got, lead.Plan.Steps) {
		return nil, report.Machine{}, nil, nil, nil, errors.New("merge: the segments' plan is not the one this bench makes of their settings (a different version of the bench?)")
	}
	var runs []*speed.RunResult
	for i, s := range plan {
		spec := speed.RunSpec{Impl: s.Impl, Cell: s.Cell, Round: s.Round, Duration: cfg.Duration,
			MaxOps: cfg.MaxOps, Rate: cfg.Rate, TTL: cfg.TTL, Step: i,
			Tag: fmt.Sprintf("%s%s:%d", env.KeyRoot, cfg.RunID, i)}
		var parts []speed.SegmentRun
		for _, sg := range segs {
			if sg.Runs[i].Step != i {
				return nil, report.Machine{}, nil, nil, nil, fmt.Errorf("merge: worker %d's run %d is numbered %d", sg.Worker, i+1, sg.Runs[i].Step+1)
			}
			parts = append(parts, sg.Runs[i])
		}
		r, err := speed.MergeRuns(spec, parts)
		if err != nil {
			return nil, report.Machine{}, nil, nil, nil, fmt.Errorf("merge: %s, %s, round %d: %w", s.Impl.Name, s.Cell, s.Round+1, err)
		}
		runs = append(runs, r)
	}
	mach := lead.Machine
	mach.Workers, mach.RunID = lead.Workers, lead.RunID
	return &cfg, mach, lead.Plan.Cells, impls, runs, nil
}

// runMerge is `go run ./bench merge [-out DIR] [-plots=false] DIR...`.
func runMerge(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := flag.NewFlagSet("bench merge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: go run ./bench merge [-out DIR] DIR...\n\n"+
			"Reads the segment.json of each worker of a split bench (-worker i/N -run-id ID, one -out DIR each),\n"+
			"checks they are the N workers of one run on one plan, adds them up, and writes the report\n"+
			"(report.md, summary.json, .hgrm files, plots) a single process would have written.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	out := fs.String("out", "", "results `dir` (default bench/results/<UTC timestamp>/, and bench/results/latest points at it)")
	plots := fs.Bool("plots", true, "draw the PNG and SVG plots")
	if err := fs.Parse(args); err != nil {
		return err
	}
	segs, err := loadSegments(fs.Args())
	if err != nil {
		return err
	}
	cfg, mach, cs, impls, runs, err := mergeResults(segs)
	if err != nil {
		return err
	}
	cfg.Plots = *plots
	dir, latest, err := resultsDir(*out)
	if err != nil {
		return err
	}
	res := report.NewResults(cfg, mach, cs, impls, runs)
	tables, err := res.Write(dir)
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, tables)
	if err := report.WriteJSON(filepath.Join(dir, "machine.json"), mach); err != nil {
		return err
	}
	if err := publish(ctx, dir, latest, stderr); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "results: %s (%d workers, run id %s)\n", dir, mach.Workers, mach.RunID)
	fmt.Fprintf(stdout, "report:  %s\n", filepath.Join(dir, "report.md"))
	if bad := unsafeRows(res.Rows); len(bad) > 0 {
		return errors.New(strings.Join(bad, "; "))
	}
	return nil
}
