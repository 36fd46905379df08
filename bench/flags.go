package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locklab/locklab/bench/env"
	"github.com/locklab/locklab/bench/faults"
	"github.com/locklab/locklab/bench/speed"
)

// parseFlags parses args (without the program name). Explicit flags win
// over the -quick preset.
func parseFlags(args []string, stderr io.Writer) (*speed.Config, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: go run ./bench [flags]\n\n"+
			"Runs every selected lock side by side against rig-started redis-servers (or -addrs),\n"+
			"writes summary.json, report.md, .hgrm files and plots, and prints the result path.\n\nFlags:\n")
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
		addrs     = fs.String("addrs", "", "external servers host:port,... instead of the rig (5 needed for 5-node locks)")
		quick     = fs.Bool("quick", false, "smoke preset: 8 clients, one 250ms round of every scenario (explicit flags win)")
		full      = fs.Bool("full", false, "the whole plan (make bench-full): every scenario (rtt too), every -clients value and -hold; without it (and without -quick, -scenarios, -clients, -keys-clients, -hold) only each scenario's headline cell runs, the one its verdict needs")
		ttl       = fs.Duration("ttl", speed.DefaultTTL, "lease of every lock")
		maxOps    = fs.Int64("max-ops", speed.DefaultMaxOps, "acquisitions after which a run stops early")
		plots     = fs.Bool("plots", true, "draw the PNG and SVG plots")
		cpuprof   = fs.String("cpuprofile", "", "write a CPU profile of the bench process (the clients, not the servers) to `file`")
		check     = fs.String("check", "async", "violation counter: async (ordered, no added round trip) or sync (each update waits for its reply inside the critical section)")
		faultsF   = fs.String("faults", strings.Join(faults.ScheduleIDs(), ","), "fault scoreboard: the fault schedules to run")
		faultRuns = fs.Int("fault-runs", faults.DefaultFaultRuns, "fault scoreboard: seeded runs of every lock under every schedule")
		seed      = fs.Uint64("seed", 1, "fault scoreboard: the seed of the runs")
		timelines = fs.String("fault-timelines", "first", "fault scoreboard: timelines to write: first (each cell's first run, first unsafe and first stuck run) or all")
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
		Rate: *rate, Quick: *quick, Ttl: *ttl, MaxOps: *maxOps, Plots: *plots, Check: *check, Cpuprof: *cpuprof,
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
	if strings.TrimSpace(*addrs) != "" {
		if c.Addrs, err = parseNames("-addrs", *addrs); err != nil {
			return nil, err
		}
	}
	if set["server"] {
		if c.Servers, err = parseServers(*server); err != nil {
			return nil, err
		}
		if len(c.Servers) > 1 && len(c.Addrs) > 0 {
			return nil, fmt.Errorf("-server %s: with -addrs the servers are given, of one kind; use one -server kind (it labels the rows) or the rig", *server)
		}
	}
	if *full && c.Quick {
		return nil, errors.New("-full and -quick: pick one")
	}
	c.Headline = !*full && !c.Quick && !set["scenarios"] && !set["clients"] && !set["keys-clients"] && !set["hold"]
	if c.Headline {
		c.Scenarios = speed.HeadlineScenarios
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
