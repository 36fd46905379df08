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
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/locklab/locklab/bench/registry"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/locklab/locklab/bench/htmlreport"
	"github.com/locklab/locklab/internal/module"
	"github.com/locklab/locklab/internal/rig"
)

func main() {
	if spec := os.Getenv(faultChildEnv); spec != "" {
		os.Exit(faultChildMain(spec)) // a fault scoreboard client process
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
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	if cfg.cpuprof != "" {
		f, err := os.Create(cfg.cpuprof)
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
	wantFaults := slices.Contains(cfg.scenarios, scFaults)
	cs := cells(cfg)
	if len(cs) == 0 && !wantFaults {
		return errors.New("nothing to run: no cell for these -scenarios and -clients")
	}
	var impls, faultImpls []*registry.Lock
	nodes := 1
	if len(cs) > 0 {
		if impls, err = registry.Resolve(cfg.impls); err != nil {
			return err
		}
		impls = withClientKinds(dropLoneControl(impls, cfg), cfg.client)
		for _, im := range impls {
			nodes = max(nodes, im.Nodes)
		}
	}
	if wantFaults {
		if faultImpls, err = resolveFaultImpls(cfg.impls); err != nil {
			return err
		}
		nodes = max(nodes, faultServers)
	}
	if len(cfg.addrs) > 0 && len(cfg.addrs) < nodes {
		why := "the selected locks need"
		if wantFaults {
			why = "the fault scoreboard needs (5 lock servers and the resource's)"
		}
		return fmt.Errorf("-addrs lists %d servers; %s %d", len(cfg.addrs), why, nodes)
	}

	dir, latest, err := resultsDir(cfg.out)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = os.Remove(dir) // only if still empty
		}
	}()
	mach := describeMachine(args)
	srv, err := startKinds(ctx, cfg.addrs, nodes, cfg.servers)
	if err != nil {
		return err
	}
	defer srv.close()
	mach.RedisVersion = srv.version(ctx)
	mach.ServerVersions = srv.versions(ctx)
	if srv.external {
		mach.Servers = "external: " + strings.Join(srv.addrs, ",")
	} else {
		prov, _ := rig.ProviderName()
		mach.Servers = fmt.Sprintf("%d servers from the rig, provider %s, no persistence", len(srv.addrs), prov)
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
	if err := writeJSON(filepath.Join(dir, "machine.json"), mach); err != nil {
		return err
	}
	// report.html beside report.md and faults.md, and its screenshot (bench/htmlreport).
	var rows []htmlreport.Lock
	for _, im := range registry.Locks {
		rows = append(rows, htmlreport.Lock{Name: im.Name, Kind: string(im.Kind), Nodes: im.Nodes, System: systemOf(im)})
	}
	if page, err := htmlreport.Write(dir, rows); err != nil {
		return err
	} else if err := htmlreport.Check(ctx, page, filepath.Join(dir, "report.png")); err != nil {
		fmt.Fprintf(stderr, "bench: report.html: %v\n", err)
	}
	if latest != "" {
		if err := pointLatest(latest, dir); err != nil {
			return err
		}
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

// runSpeed runs the speed scenarios and writes their files; it returns
// the safe locks that showed violations.
func runSpeed(ctx context.Context, cfg *config, mach *machine, srv *servers, cs []cell, impls []*registry.Lock, dir string, stdout, stderr io.Writer) ([]string, error) {
	plan := steps(cfg.rounds, cs, impls)
	fmt.Fprintf(stderr, "bench: %d impls (%s) × %d cells × %d rounds = %d runs of %s; planned about %s plus server start\n",
		len(impls), strings.Join(implNames(impls), ","), len(cs), cfg.rounds, len(plan), cfg.duration,
		estimate(plan, cfg.duration).Round(time.Second))
	leds, err := dialLedgers(srv, cfg.check == "sync")
	if err != nil {
		return nil, err
	}
	defer leds.close()

	runID := randomID()
	mach.RedisBenchmark = newRedisBench(benchConcurrency(cs))
	rbKey := keyRoot + runID + ":redis-benchmark"
	prog := newProgress(stderr, len(plan), cfg.duration+perRunOverhead)
	var runs []*runResult
	for i, s := range plan {
		if i == 0 || plan[i-1].round != s.round {
			// redis-benchmark in the same state of the machine as the
			// round's runs.
			mach.RedisBenchmark.measure(ctx, srv.addrs[0], rbKey)
			if err := srv.admin[0].Del(ctx, rbKey).Err(); err != nil {
				return nil, fmt.Errorf("delete %s: %w", rbKey, err)
			}
		}
		prog.begin(s, cfg.rounds)
		on, led := leds.of(s.cell.server) // the servers of the cell's kind (-server)
		addrs := on.addrs
		if s.cell.rtt > 0 {
			if addrs, err = on.proxied(s.cell.rtt); err != nil {
				return nil, err
			}
		}
		spec := runSpec{
			impl: s.impl, cell: s.cell, round: s.round, duration: cfg.duration,
			maxOps: cfg.maxOps, rate: cfg.rate, ttl: cfg.ttl, addrs: addrs,
			tag: fmt.Sprintf("%s%s:%d", keyRoot, runID, i),
		}
		r, err := execute(ctx, on, led, spec)
		if err != nil {
			return nil, fmt.Errorf("%s, %s, round %d: %w", s.impl.Name, s.cell, s.round+1, err)
		}
		runs = append(runs, r)
		prog.end()
	}
	prog.finish()

	res := newResults(cfg, *mach, cs, impls, runs)
	tables, err := res.write(dir)
	if err != nil {
		return nil, err
	}
	fmt.Fprint(stdout, tables)

	var bad []string
	for _, r := range res.rows {
		if r.Violations > 0 && !registry.Locks[r.Impl].Naive {
			bad = append(bad, fmt.Sprintf("%s (%s N=%d: %d)", r.Impl, r.Scenario, r.Clients, r.Violations))
		}
	}
	if len(bad) > 0 {
		return []string{"mutual exclusion violated by a lock that claims to be safe: " + strings.Join(bad, ", ")}, nil
	}
	return nil, nil
}

// runScoreboard runs the fault scoreboard and writes its files; it
// returns our locks' broken promises.
func runScoreboard(ctx context.Context, cfg *config, mach machine, srv *servers, impls []*registry.Lock, dir string, stdout, stderr io.Writer) ([]string, error) {
	fs := &faultSetup{runs: cfg.faultRuns, seed: cfg.seed, impls: impls, srv: srv, external: srv.external, allTimelines: cfg.allTimelines}
	for _, sch := range schedules {
		if slices.Contains(cfg.faults, sch.id) {
			fs.schedules = append(fs.schedules, sch)
		}
	}
	fmt.Fprintf(stderr, "faults: %d locks (%s) × %d schedules × %d runs\n", len(impls),
		strings.Join(implNames(impls), ","), len(fs.schedules), fs.runs)
	start := time.Now()
	cells, err := runFaults(ctx, fs, stderr)
	if err != nil {
		return nil, err
	}
	fr := &faultReport{mach: mach, setup: fs, cells: cells, took: time.Since(start)}
	matrix, err := fr.write(dir, cfg.plots)
	if err != nil {
		return nil, err
	}
	fmt.Fprint(stdout, matrix)
	if b := fr.blind(); len(b) > 0 {
		fmt.Fprintf(stderr, "faults: warning: a naive lock's mistake did not show: %s (see faults.md, The control rows)\n", strings.Join(b, ", "))
	}
	if b := fr.brokenPromises(); len(b) > 0 {
		return []string{"a lock of ours is unsafe under a fault it claims to survive: " + strings.Join(b, ", ")}, nil
	}
	return nil, nil
}

// benchConcurrency returns the client counts of the cells that talk to the
// servers directly, for redis-benchmark.
func benchConcurrency(cs []cell) []int {
	var out []int
	for _, c := range cs {
		if c.rtt == 0 {
			out = append(out, c.clients)
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

func randomID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
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

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
