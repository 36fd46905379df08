// Command bench runs every selected lock side by side, with redsync and
// other peers, against the same Redis servers, and writes summary.json,
// report.md, HdrHistogram percentile files and plots.
//
//	go run ./bench                  # the full suite (make bench)
//	go run ./bench -quick           # a smoke run under a minute (make bench-quick)
//	go run ./bench -scenarios contended -impls correct,redsync-1 -clients 32 -hold 1ms -duration 3s
//
// Progress goes to stderr; the tables and the results path to stdout.
// The README's "What the bench measures" describes the output, and
// report.md's Method section how each figure is measured.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/locklab/locklab/bench/env"
	"github.com/locklab/locklab/bench/faults"
	"github.com/locklab/locklab/bench/htmlreport"
	"github.com/locklab/locklab/bench/registry"
	"github.com/locklab/locklab/bench/report"
	"github.com/locklab/locklab/bench/speed"
	"github.com/locklab/locklab/internal/module"
	"github.com/locklab/locklab/internal/rig"
)

func main() {
	if spec := os.Getenv(env.FaultChildEnv); spec != "" {
		os.Exit(faults.FaultChildMain(spec)) // a fault scoreboard client process
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
	}
}

// run is the whole program, with its streams, so tests can call it.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	if len(args) > 0 && args[0] == "merge" {
		return runMerge(ctx, args[1:], stdout, stderr) // workers.go
	}
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	if cfg.Cpuprof != "" {
		f, err := os.Create(cfg.Cpuprof)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			_ = f.Close()
			return err
		}
		defer func() {
			pprof.StopCPUProfile()
			err = errors.Join(err, f.Close())
		}()
	}
	wantFaults := slices.Contains(cfg.Scenarios, faults.ScFaults)
	cs := speed.Cells(cfg)
	if len(cs) == 0 && !wantFaults {
		return errors.New("nothing to run: no cell for these -scenarios and -clients")
	}
	var impls, faultImpls []*registry.Lock
	nodes := 1
	if len(cs) > 0 {
		if impls, err = registry.Resolve(cfg.Impls); err != nil {
			return err
		}
		if impls, err = fitImpls(impls, cfg, stderr); err != nil { // a cluster or Sentinel group (deploy.go)
			return err
		}
		impls = speed.WithClientKinds(speed.DropLoneControl(impls, cfg), cfg.Client)
		if err := checkWorkerImpls(cfg, impls); err != nil {
			return err
		}
		for _, im := range impls {
			nodes = max(nodes, im.Nodes)
		}
	}
	if wantFaults {
		if faultImpls, err = faults.ResolveFaultImpls(cfg.Impls); err != nil {
			return err
		}
		nodes = max(nodes, faults.FaultServers)
	}
	if len(cfg.Addrs) > 0 && len(cfg.Addrs) < nodes {
		why := "the selected locks need"
		if wantFaults {
			why = "the fault scoreboard needs (5 lock servers and the resource's)"
		}
		return fmt.Errorf("-addrs lists %d servers; %s %d", len(cfg.Addrs), why, nodes)
	}

	dir, latest, err := resultsDir(cfg.Out)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = os.Remove(dir) // only if still empty
		}
	}()
	mach := report.DescribeMachine(args)
	srv, err := startServers(ctx, cfg, nodes)
	if err != nil {
		return err
	}
	defer srv.Close()
	mach.RedisVersion = srv.Version(ctx)
	mach.ServerVersions = srv.Versions(ctx)
	if srv.External {
		mach.Servers = describeServers(srv)
	} else {
		prov, _ := rig.ProviderName()
		mach.Servers = fmt.Sprintf("%d servers from the rig, provider %s, no persistence", len(srv.Addrs), prov)
	}

	var bad []string
	if len(cs) > 0 {
		b, err := runSpeed(ctx, cfg, &mach, srv, cs, impls, dir, stdout, stderr)
		if err != nil {
			return err
		}
		bad = append(bad, b...)
	}
	if wantFaults {
		b, err := runScoreboard(ctx, cfg, mach, srv, faultImpls, dir, stdout, stderr)
		if err != nil {
			return err
		}
		bad = append(bad, b...)
	}
	if err := report.WriteJSON(filepath.Join(dir, "machine.json"), mach); err != nil {
		return err
	}
	if cfg.Workers > 0 { // a worker: its segment, for bench merge
		fmt.Fprintf(stdout, "segment: %s (worker %d of %d, run id %s)\n", filepath.Join(dir, segmentFile), cfg.Worker, cfg.Workers, cfg.RunID)
		return nil
	}
	if err := publish(ctx, dir, latest, stderr); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "results: %s\n", dir)
	if len(cs) > 0 {
		fmt.Fprintf(stdout, "report:  %s\n", filepath.Join(dir, "report.md"))
	}
	if wantFaults {
		fmt.Fprintf(stdout, "faults:  %s\n", filepath.Join(dir, "faults.md"))
	}
	if len(bad) > 0 {
		return errors.New(strings.Join(bad, "; "))
	}
	return nil
}

// publish finishes a results directory the same way for a run and a
// merge: report.html (writeHTML), then bench/results/latest pointed at dir
// when latest is set (resultsDir's default place).
func publish(ctx context.Context, dir, latest string, stderr io.Writer) error {
	if err := writeHTML(ctx, dir, stderr); err != nil {
		return err
	}
	if latest != "" {
		return pointLatest(latest, dir)
	}
	return nil
}

// writeHTML writes report.html beside report.md and faults.md, and its
// screenshot (bench/htmlreport).
func writeHTML(ctx context.Context, dir string, stderr io.Writer) error {
	var rows []htmlreport.Lock
	for _, im := range registry.Locks {
		rows = append(rows, htmlreport.Lock{Name: im.Name, Kind: string(im.Kind), Nodes: im.Nodes, System: registry.SystemOf(im)})
	}
	if page, err := htmlreport.Write(dir, rows); err != nil {
		return err
	} else if err := htmlreport.Check(ctx, page, filepath.Join(dir, "report.png")); err != nil {
		fmt.Fprintf(stderr, "bench: report.html: %v\n", err)
	}
	return nil
}

// unsafeRows names the safe locks whose rows show violations.
func unsafeRows(rows []speed.Row) []string {
	var bad []string
	for _, r := range rows {
		if r.Violations > 0 && !registry.Locks[r.Impl].Naive {
			bad = append(bad, fmt.Sprintf("%s (%s N=%d: %d)", r.Impl, r.Scenario, r.Clients, r.Violations))
		}
	}
	if len(bad) > 0 {
		return []string{"mutual exclusion violated by a lock that claims to be safe: " + strings.Join(bad, ", ")}
	}
	return nil
}

// runSpeed runs the speed scenarios and writes their files; it returns
// the safe locks that showed violations.
func runSpeed(ctx context.Context, cfg *speed.Config, mach *report.Machine, srv *env.Servers, cs []speed.Cell, impls []*registry.Lock, dir string, stdout, stderr io.Writer) (_ []string, err error) {
	plan := speed.Steps(cfg.Rounds, cs, impls)
	fmt.Fprintf(stderr, "bench: %d impls (%s) × %d cells × %d rounds = %d runs of %s; planned about %s plus server start\n",
		len(impls), strings.Join(implNames(impls), ","), len(cs), cfg.Rounds, len(plan), cfg.Duration,
		speed.Estimate(plan, cfg.Duration).Round(time.Second))
	leds, err := speed.DialLedgers(srv, cfg.Check == "sync")
	if err != nil {
		return nil, err
	}
	defer leds.Close()

	runID := env.RandomID()
	var group *speed.Group // -worker: the workers' barriers (workers.go)
	if cfg.Workers > 0 {
		runID = cfg.RunID
		if group, err = startWorker(ctx, cfg, srv, stderr); err != nil {
			return nil, err
		}
		defer func() {
			if err != nil { // leave no barrier key of ours behind
				bg, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				err = errors.Join(err, group.Abandon(bg))
			}
		}()
	}
	mach.RedisBenchmark = speed.NewRedisBench(benchConcurrency(cs))
	rbKey := env.KeyRoot + runID + ":redis-benchmark" + srv.Tag // on the first server (a cluster's: srv.Tag)
	prog := speed.NewProgress(stderr, len(plan), cfg.Duration+speed.PerRunOverhead)
	var runs []*speed.RunResult
	for i, s := range plan {
		if (i == 0 || plan[i-1].Round != s.Round) && (group == nil || group.Lead()) {
			// redis-benchmark in the same state of the machine as the
			// round's runs.
			mach.RedisBenchmark.Measure(ctx, srv.Addrs[0], rbKey)
			if err := srv.Admin[0].Del(ctx, rbKey).Err(); err != nil {
				return nil, fmt.Errorf("delete %s: %w", rbKey, err)
			}
		}
		prog.Begin(s, cfg.Rounds)
		on, led := leds.Of(s.Cell.Server) // the servers of the cell's kind (-server)
		addrs := on.Addrs
		if s.Cell.Rtt > 0 {
			if addrs, err = on.Proxied(s.Cell.Rtt); err != nil {
				return nil, err
			}
		}
		spec := speed.RunSpec{
			Impl: s.Impl, Cell: s.Cell, Round: s.Round, Duration: cfg.Duration,
			MaxOps: cfg.MaxOps, Rate: cfg.Rate, TTL: cfg.TTL, Addrs: addrs,
			Tag:   fmt.Sprintf("%s%s:%d", env.KeyRoot, runID, i),
			Group: group, Step: i,
		}
		r, err := speed.Execute(ctx, on, led, spec)
		if err != nil {
			return nil, fmt.Errorf("%s, %s, round %d: %w", s.Impl.Name, s.Cell, s.Round+1, err)
		}
		runs = append(runs, r)
		prog.End()
	}
	prog.Finish()
	if group != nil {
		return nil, writeSegment(ctx, dir, cfg, group, *mach, cs, impls, plan, runs)
	}

	res := report.NewResults(cfg, *mach, cs, impls, runs)
	tables, err := res.Write(dir)
	if err != nil {
		return nil, err
	}
	fmt.Fprint(stdout, tables)
	return unsafeRows(res.Rows), nil
}

// runScoreboard runs the fault scoreboard and writes its files; it
// returns our locks' broken promises.
func runScoreboard(ctx context.Context, cfg *speed.Config, mach report.Machine, srv *env.Servers, impls []*registry.Lock, dir string, stdout, stderr io.Writer) ([]string, error) {
	fs := &faults.FaultSetup{Runs: cfg.FaultRuns, Seed: cfg.Seed, Impls: impls, Srv: srv, External: srv.External, AllTimelines: cfg.AllTimelines}
	for _, sch := range faults.Schedules {
		if slices.Contains(cfg.Faults, sch.ID) {
			fs.Schedules = append(fs.Schedules, sch)
		}
	}
	fmt.Fprintf(stderr, "faults: %d locks (%s) × %d schedules × %d runs\n", len(impls),
		strings.Join(implNames(impls), ","), len(fs.Schedules), fs.Runs)
	start := time.Now()
	cells, err := faults.RunFaults(ctx, fs, stderr)
	if err != nil {
		return nil, err
	}
	fr := &report.FaultReport{Mach: mach, Setup: fs, Cells: cells, Took: time.Since(start)}
	matrix, err := fr.Write(dir, cfg.Plots)
	if err != nil {
		return nil, err
	}
	fmt.Fprint(stdout, matrix)
	if b := fr.Blind(); len(b) > 0 {
		fmt.Fprintf(stderr, "faults: warning: a naive lock's mistake did not show: %s (see faults.md, The control rows)\n", strings.Join(b, ", "))
	}
	if b := fr.BrokenPromises(); len(b) > 0 {
		return []string{"a lock of ours is unsafe under a fault it claims to survive: " + strings.Join(b, ", ")}, nil
	}
	return nil, nil
}

// benchConcurrency returns the client counts of the cells that talk to the
// servers directly, for redis-benchmark.
func benchConcurrency(cs []speed.Cell) []int {
	var out []int
	for _, c := range cs {
		if c.Rtt == 0 {
			out = append(out, c.Clients)
		}
	}
	return out
}

func implNames(impls []*registry.Lock) []string {
	out := make([]string, len(impls))
	for i, im := range impls {
		out[i] = im.Name
	}
	return out
}

// resultsDir creates the output directory: out as given, or
// bench/results/<UTC timestamp> under the module root, in which case it
// also returns the path of the "latest" symlink to update.
func resultsDir(out string) (dir, latest string, err error) {
	if out == "" {
		root, err := moduleRoot()
		if err != nil {
			return "", "", err
		}
		base := filepath.Join(root, "bench", "results")
		dir = filepath.Join(base, time.Now().UTC().Format("20060102T150405Z"))
		latest = filepath.Join(base, "latest")
	} else {
		dir = out
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", fmt.Errorf("-out: %w", err)
	}
	probe := filepath.Join(dir, ".write-test")
	if err := os.WriteFile(probe, nil, 0o644); err != nil {
		return "", "", fmt.Errorf("-out: %s is not writable: %w", dir, err)
	}
	_ = os.Remove(probe)
	return dir, latest, nil
}

// moduleRoot finds the directory of locklab's go.mod from the working
// directory upwards.
func moduleRoot() (string, error) {
	return module.Root("cannot find the locklab module root for bench/results; run from the repository or pass -out")
}

// pointLatest makes the symlink latest point at dir (relatively), replacing
// any previous link atomically.
func pointLatest(latest, dir string) error {
	tmp := latest + ".tmp"
	_ = os.Remove(tmp)
	if err := os.Symlink(filepath.Base(dir), tmp); err != nil {
		return err
	}
	return os.Rename(tmp, latest)
}

// parseFlags parses args (without the program name). Explicit flags win
// over the -quick preset.
func parseFlags(args []string, stderr io.Writer) (*speed.Config, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: go run ./bench [flags]\n"+
			"       go run ./bench merge [-out DIR] DIR...   (the segments of -worker runs into one report)\n\n"+
			"Runs every selected lock side by side against rig-started redis-servers (or -addrs),\n"+
			"writes summary.json, report.md, .hgrm files and plots, and prints the result path.\n"+
			"With -worker i/N -run-id ID, N processes (on other machines too) split every cell's\n"+
			"clients against the same -addrs, each writes a segment, and merge makes the report.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	var (
		out       = fs.String("out", "", "results `dir` (default bench/results/<UTC timestamp>/, and bench/results/latest points at it)")
		scenarios = fs.String("scenarios", strings.Join(speed.AllScenarios, ","), "scenarios to run: uncontended, contended, keys, rtt; faults for the fault scoreboard (make faults)")
		impls     = fs.String("impls", "", "implementations to run, comma-separated; globs allowed (naive-*); default every safe one")
		clients   = fs.String("clients", joinInts(speed.DefaultClients), "contending clients `list` (contended; rtt uses the largest up to 8)")
		keysCl    = fs.String("keys-clients", joinInts(speed.DefaultKeysClients), "clients `list` of the keys scenario (many keys, little contention)")
		holds     = fs.String("hold", "0,1ms", "hold `list`: time each holder keeps the lock")
		duration  = fs.Duration("duration", speed.DefaultDuration, "length of each run")
		rounds    = fs.Int("rounds", speed.DefaultRounds, "rounds; each rotates the order of the implementations")
		keys      = fs.Int("keys", speed.DefaultKeys, "number of keys in the keys scenario")
		rtt       = fs.Duration("rtt", speed.DefaultRTT, "latency the proxy adds each way in the rtt scenario")
		rate      = fs.Float64("rate", 0, "open loop: arrivals per second per run, latency from the scheduled arrival (0 = closed loop)")
		server    = fs.String("server", env.ServerRedis, "kinds of Redis server `list`: redis, valkey; with both (redis,valkey) every Redis lock runs on each in every round, and the report gives Valkey/Redis ratios")
		client    = fs.String("client", registry.Plain, "kinds of go-redis client `list`: plain (each contending client its own pool), autopipe (goroutines of one process sharing one AutoPipeliner per server: rows lock@autopipe); without it, the default plan and -full also run correct, redislock, redsync-1, raw and raw+receipt on AutoPipeliners in the contended and keys headline cells")
		addrs     = fs.String("addrs", "", addrsUsage)
		quick     = fs.Bool("quick", false, "smoke preset: 8 clients, one 250ms round of every scenario (explicit flags win)")
		full      = fs.Bool("full", false, "the whole plan (make bench-full): every scenario (rtt too), every -clients value and -hold; without it (and without -quick, -scenarios, -clients, -keys-clients, -hold) only each scenario's headline cell runs, the one its verdict needs")
		ttl       = fs.Duration("ttl", speed.DefaultTTL, "lease of every lock")
		maxOps    = fs.Int64("max-ops", speed.DefaultMaxOps, "acquisitions after which a run stops early")
		plots     = fs.Bool("plots", true, "draw the PNG and SVG plots")
		cpuprof   = fs.String("cpuprofile", "", "write a CPU profile of the bench process (the clients, not the servers) to `file`")
		check     = fs.String("check", "async", "violation counter: async (ordered, no added round trip) or sync (each update waits for its reply inside the critical section; -worker implies it)")
		faultsF   = fs.String("faults", strings.Join(faults.ScheduleIDs(), ","), "fault scoreboard: the fault schedules to run")
		faultRuns = fs.Int("fault-runs", faults.DefaultFaultRuns, "fault scoreboard: seeded runs of every lock under every schedule")
		seed      = fs.Uint64("seed", 1, "fault scoreboard: the seed of the runs")
		timelines = fs.String("fault-timelines", "first", "fault scoreboard: timelines to write: first (each cell's first run, first unsafe and first stuck run) or all")
		wf        = addWorkerFlags(fs) // -worker, -run-id, -start, -barrier-timeout (workers.go)
	)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %q (flags only; see -h)", fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	c := &speed.Config{Out: *out, Duration: *duration, Rounds: *rounds, Keys: *keys, Rtt: *rtt,
		Rate: *rate, Quick: *quick, TTL: *ttl, MaxOps: *maxOps, Plots: *plots, Check: *check, Cpuprof: *cpuprof,
		FaultRuns: *faultRuns, Seed: *seed, AllTimelines: *timelines == "all"}
	if *timelines != "first" && *timelines != "all" {
		return nil, fmt.Errorf("-fault-timelines must be first or all, got %q", *timelines)
	}
	var err error
	if c.Scenarios, err = parseNames("-scenarios", *scenarios); err != nil {
		return nil, err
	}
	for _, s := range c.Scenarios {
		if !slices.Contains(speed.AllScenarios, s) && s != faults.ScFaults {
			return nil, fmt.Errorf("-scenarios: unknown scenario %q; known: %s, %s", s, strings.Join(speed.AllScenarios, ", "), faults.ScFaults)
		}
	}
	if c.Faults, err = parseNames("-faults", *faultsF); err != nil {
		return nil, err
	}
	for _, f := range c.Faults {
		if faults.ScheduleByID(f) == nil {
			return nil, fmt.Errorf("-faults: unknown fault schedule %q; known: %s", f, strings.Join(faults.ScheduleIDs(), ", "))
		}
	}
	if strings.TrimSpace(*impls) != "" {
		if c.Impls, err = parseNames("-impls", *impls); err != nil {
			return nil, err
		}
	}
	if c.Clients, err = parseInts("-clients", *clients); err != nil {
		return nil, err
	}
	if c.KeysCl, err = parseInts("-keys-clients", *keysCl); err != nil {
		return nil, err
	}
	if c.Holds, err = parseDurations("-hold", *holds); err != nil {
		return nil, err
	}
	if c.Addrs, c.Deploy, err = parseAddrs(*addrs); err != nil { // deploy.go
		return nil, err
	}
	if set["server"] {
		if c.Servers, err = parseServers(*server); err != nil {
			return nil, err
		}
		if len(c.Servers) > 1 && (len(c.Addrs) > 0 || c.Deploy.Set()) {
			return nil, fmt.Errorf("-server %s: with -addrs the servers are given, of one kind; use one -server kind (it labels the rows) or the rig", *server)
		}
	}
	if set["client"] {
		if c.Client, err = parseNames("-client", *client); err != nil {
			return nil, err
		}
		if err := registry.ParseClientKinds(c.Client); err != nil {
			return nil, err
		}
	}
	if *full && c.Quick {
		return nil, errors.New("-full and -quick: pick one")
	}
	c.Headline = !*full && !c.Quick && !set["scenarios"] && !set["clients"] && !set["keys-clients"] && !set["hold"]
	if c.Headline {
		c.Scenarios = speed.HeadlineScenarios
	}
	if !set["client"] && !c.Headline && !*full {
		c.Client = []string{registry.Plain} // a selection of cells: AutoPipeliners only when -client asks
	}
	if c.Quick {
		if !set["clients"] {
			c.Clients = speed.QuickClients
		}
		if !set["duration"] {
			c.Duration = speed.QuickDuration
		}
		if !set["rounds"] {
			c.Rounds = speed.QuickRounds
		}
	}
	if err := fitScenarios(c, set["scenarios"], stderr); err != nil { // deploy.go
		return nil, err
	}
	if err := wf.apply(c, set); err != nil {
		return nil, err
	}
	return c, c.Validate()
}

// parseNames splits a comma-separated list, rejecting empty entries and
// duplicates.
func parseNames(flagName, s string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			return nil, fmt.Errorf("%s: empty entry in %q", flagName, s)
		}
		if slices.Contains(out, f) {
			return nil, fmt.Errorf("%s: %q listed twice", flagName, f)
		}
		out = append(out, f)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: empty list", flagName)
	}
	return out, nil
}

func parseInts(flagName, s string) ([]int, error) {
	names, err := parseNames(flagName, s)
	if err != nil {
		return nil, err
	}
	out := make([]int, len(names))
	for i, n := range names {
		if out[i], err = strconv.Atoi(n); err != nil {
			return nil, fmt.Errorf("%s: %q is not an integer", flagName, n)
		}
	}
	return out, nil
}

func parseDurations(flagName, s string) ([]time.Duration, error) {
	names, err := parseNames(flagName, s)
	if err != nil {
		return nil, err
	}
	out := make([]time.Duration, len(names))
	for i, n := range names {
		if out[i], err = time.ParseDuration(n); err != nil {
			return nil, fmt.Errorf("%s: %q is not a duration (e.g. 0, 500us, 1ms)", flagName, n)
		}
	}
	return out, nil
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// parseServers parses -server: known kinds, no repeats. Without the flag
// the rig picks the kind (LOCKLAB_SERVER, redis by default) and rows carry
// no server.
func parseServers(s string) ([]string, error) {
	kinds, err := parseNames("-server", s)
	if err != nil {
		return nil, err
	}
	for _, k := range kinds {
		if !slices.Contains(env.ServerKinds, k) {
			return nil, fmt.Errorf("-server: unknown kind %q; known: %s", k, strings.Join(env.ServerKinds, ", "))
		}
	}
	return kinds, nil
}
