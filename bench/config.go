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

	"github.com/locklab/locklab/bench/registry"
)

// Scenario names accepted by -scenarios.
const (
	scUncontended = "uncontended" // 1 client, a fresh key per acquire+release pair
	scContended   = "contended"   // N clients on one key
	scKeys        = "keys"        // many clients over many keys, a random key per acquisition
	scRTT         = "rtt"         // uncontended and contended through a latency proxy
)

var allScenarios = []string{scUncontended, scContended, scKeys, scRTT}

// headlineScenarios are the scenarios of the default plan: those the
// verdicts are taken from (one key under contention, many keys, no
// contention; five servers and beyond Redis at the contended cell).
var headlineScenarios = []string{scUncontended, scContended, scKeys}

// Defaults of a run. The default plan (make bench) runs the headline cell
// of each verdict's scenario (headlineCells: uncontended, contended with 32
// clients and a 1ms hold, keys with 64 clients and hold 0) in 3 rounds of
// 800ms runs, the A/A control (raw-again) included: see the plan printed
// at start, and README's "What the bench measures" for the minutes. -full
// (make bench-full) runs every cell of every scenario (the rtt scenario
// too), every -clients value and every -hold.
const (
	defaultDuration = 800 * time.Millisecond
	defaultRounds   = 3
	defaultKeys     = 1024
	defaultRTT      = time.Millisecond
	defaultTTL      = 8 * time.Second // redsync's default expiry
	defaultMaxOps   = 2_000_000       // per run, on top of the duration
)

var (
	defaultClients     = []int{1, 2, 8, 32}
	defaultKeysClients = []int{64}
	defaultHolds       = []time.Duration{0, time.Millisecond}
)

// The -quick preset (make bench-quick): every scenario, 8 clients, both
// holds, one round of 250ms runs: 56-80s on the 2-core machine (56-60s on
// a quiet one), of which the locks on etcd, ZooKeeper and PostgreSQL take
// 15-35s, much of it starting those servers (one after another, when
// their locks first connect; starting them at once saved 1-3s of 57-60s).
const (
	quickDuration = 250 * time.Millisecond
	quickRounds   = 1
)

var quickClients = []int{8}

// config is the parsed command line.
type config struct {
	out       string // results directory; "" means bench/results/<UTC timestamp>
	scenarios []string
	impls     []string // as given; resolved by resolveImpls
	clients   []int
	keysCl    []int // clients of the keys scenario
	holds     []time.Duration
	duration  time.Duration
	rounds    int
	keys      int
	rtt       time.Duration
	rate      float64 // open-loop arrivals per second; 0 = closed loop
	addrs     []string
	servers   []string // -server: kinds of Redis server, each lock runs on each; nil = the rig's choice
	client    []string // -client: kinds of go-redis client (clients.go); nil = the default's choice
	quick     bool
	// headline keeps only the headline cell of each scenario
	// (headlineCells): the default plan, unless -full, -quick or an explicit
	// -scenarios, -clients, -keys-clients or -hold asks for more.
	headline bool
	ttl      time.Duration
	maxOps   int64
	plots    bool
	check    string // "async" or "sync": how the ledger's updates are sent
	cpuprof  string // write a CPU profile of the bench process here
	// The fault scoreboard (-scenarios faults).
	faults       []string // schedule ids
	faultRuns    int
	seed         uint64
	allTimelines bool
}

// parseFlags parses args (without the program name). Explicit flags win
// over the -quick preset.
func parseFlags(args []string, stderr io.Writer) (*config, error) {
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
		scenarios = fs.String("scenarios", strings.Join(allScenarios, ","), "scenarios to run: uncontended, contended, keys, rtt; faults for the fault scoreboard (make faults)")
		impls     = fs.String("impls", "", "implementations to run, comma-separated; globs allowed (naive-*); default every safe one")
		clients   = fs.String("clients", joinInts(defaultClients), "contending clients `list` (contended; rtt uses the largest up to 8)")
		keysCl    = fs.String("keys-clients", joinInts(defaultKeysClients), "clients `list` of the keys scenario (many keys, little contention)")
		holds     = fs.String("hold", "0,1ms", "hold `list`: time each holder keeps the lock")
		duration  = fs.Duration("duration", defaultDuration, "length of each run")
		rounds    = fs.Int("rounds", defaultRounds, "rounds; each rotates the order of the implementations")
		keys      = fs.Int("keys", defaultKeys, "number of keys in the keys scenario")
		rtt       = fs.Duration("rtt", defaultRTT, "latency the proxy adds each way in the rtt scenario")
		rate      = fs.Float64("rate", 0, "open loop: arrivals per second per run, latency from the scheduled arrival (0 = closed loop)")
		server    = fs.String("server", serverRedis, "kinds of Redis server `list`: redis, valkey; with both (redis,valkey) every Redis lock runs on each in every round, and the report gives Valkey/Redis ratios")
		client    = fs.String("client", registry.Plain, "kinds of go-redis client `list`: plain (each contending client its own pool), autopipe (goroutines of one process sharing one AutoPipeliner per server: rows lock@autopipe); without it, the default plan and -full also run correct, redislock, redsync-1, raw and raw+receipt on AutoPipeliners in the contended and keys headline cells")
		addrs     = fs.String("addrs", "", "external servers host:port,... instead of the rig (5 needed for 5-node locks)")
		quick     = fs.Bool("quick", false, "smoke preset: 8 clients, one 250ms round of every scenario (explicit flags win)")
		full      = fs.Bool("full", false, "the whole plan (make bench-full): every scenario (rtt too), every -clients value and -hold; without it (and without -quick, -scenarios, -clients, -keys-clients, -hold) only each scenario's headline cell runs, the one its verdict needs")
		ttl       = fs.Duration("ttl", defaultTTL, "lease of every lock")
		maxOps    = fs.Int64("max-ops", defaultMaxOps, "acquisitions after which a run stops early")
		plots     = fs.Bool("plots", true, "draw the PNG and SVG plots")
		cpuprof   = fs.String("cpuprofile", "", "write a CPU profile of the bench process (the clients, not the servers) to `file`")
		check     = fs.String("check", "async", "violation counter: async (ordered, no added round trip) or sync (each update waits for its reply inside the critical section)")
		faults    = fs.String("faults", strings.Join(scheduleIDs(), ","), "fault scoreboard: the fault schedules to run")
		faultRuns = fs.Int("fault-runs", defaultFaultRuns, "fault scoreboard: seeded runs of every lock under every schedule")
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

	c := &config{out: *out, duration: *duration, rounds: *rounds, keys: *keys, rtt: *rtt,
		rate: *rate, quick: *quick, ttl: *ttl, maxOps: *maxOps, plots: *plots, check: *check, cpuprof: *cpuprof,
		faultRuns: *faultRuns, seed: *seed, allTimelines: *timelines == "all"}
	if *timelines != "first" && *timelines != "all" {
		return nil, fmt.Errorf("-fault-timelines must be first or all, got %q", *timelines)
	}
	var err error
	if c.scenarios, err = parseNames("-scenarios", *scenarios); err != nil {
		return nil, err
	}
	for _, s := range c.scenarios {
		if !slices.Contains(allScenarios, s) && s != scFaults {
			return nil, fmt.Errorf("-scenarios: unknown scenario %q; known: %s, %s", s, strings.Join(allScenarios, ", "), scFaults)
		}
	}
	if c.faults, err = parseNames("-faults", *faults); err != nil {
		return nil, err
	}
	for _, f := range c.faults {
		if scheduleByID(f) == nil {
			return nil, fmt.Errorf("-faults: unknown fault schedule %q; known: %s", f, strings.Join(scheduleIDs(), ", "))
		}
	}
	if strings.TrimSpace(*impls) != "" {
		if c.impls, err = parseNames("-impls", *impls); err != nil {
			return nil, err
		}
	}
	if c.clients, err = parseInts("-clients", *clients); err != nil {
		return nil, err
	}
	if c.keysCl, err = parseInts("-keys-clients", *keysCl); err != nil {
		return nil, err
	}
	if c.holds, err = parseDurations("-hold", *holds); err != nil {
		return nil, err
	}
	if strings.TrimSpace(*addrs) != "" {
		if c.addrs, err = parseNames("-addrs", *addrs); err != nil {
			return nil, err
		}
	}
	if set["server"] {
		if c.servers, err = parseServers(*server); err != nil {
			return nil, err
		}
		if len(c.servers) > 1 && len(c.addrs) > 0 {
			return nil, fmt.Errorf("-server %s: with -addrs the servers are given, of one kind; use one -server kind (it labels the rows) or the rig", *server)
		}
	}
	if set["client"] {
		if c.client, err = parseNames("-client", *client); err != nil {
			return nil, err
		}
		if err := registry.ParseClientKinds(c.client); err != nil {
			return nil, err
		}
	}
	if *full && c.quick {
		return nil, errors.New("-full and -quick: pick one")
	}
	c.headline = !*full && !c.quick && !set["scenarios"] && !set["clients"] && !set["keys-clients"] && !set["hold"]
	if c.headline {
		c.scenarios = headlineScenarios
	}
	if !set["client"] && !c.headline && !*full {
		c.client = []string{registry.Plain} // a selection of cells: AutoPipeliners only when -client asks
	}
	if c.quick {
		if !set["clients"] {
			c.clients = quickClients
		}
		if !set["duration"] {
			c.duration = quickDuration
		}
		if !set["rounds"] {
			c.rounds = quickRounds
		}
	}
	return c, c.validate()
}

func (c *config) validate() error {
	switch {
	case c.duration <= 0:
		return fmt.Errorf("-duration must be > 0, got %v", c.duration)
	case c.rounds < 1:
		return fmt.Errorf("-rounds must be >= 1, got %d", c.rounds)
	case c.keys < 1:
		return fmt.Errorf("-keys must be >= 1, got %d", c.keys)
	case c.rtt <= 0 && slices.Contains(c.scenarios, scRTT):
		return fmt.Errorf("-rtt must be > 0 for the rtt scenario, got %v", c.rtt)
	case c.rate < 0:
		return fmt.Errorf("-rate must be >= 0, got %v", c.rate)
	case c.ttl <= 0:
		return fmt.Errorf("-ttl must be > 0, got %v", c.ttl)
	case c.maxOps < 1:
		return fmt.Errorf("-max-ops must be >= 1, got %d", c.maxOps)
	case c.check != "async" && c.check != "sync":
		return fmt.Errorf("-check must be async or sync, got %q", c.check)
	case c.faultRuns < 1 || c.faultRuns > 1000:
		return fmt.Errorf("-fault-runs must be 1..1000, got %d", c.faultRuns)
	}
	for _, n := range c.clients {
		if n < 1 || n > 1024 {
			return fmt.Errorf("-clients: %d is out of range 1..1024", n)
		}
	}
	for _, n := range c.keysCl {
		if n < 2 || n > 1024 {
			return fmt.Errorf("-keys-clients: %d is out of range 2..1024", n)
		}
	}
	for _, h := range c.holds {
		if h < 0 || h > c.ttl/2 {
			return fmt.Errorf("-hold: %v is out of range 0..ttl/2 (%v)", h, c.ttl/2)
		}
	}
	return nil
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
		if !slices.Contains(serverKinds, k) {
			return nil, fmt.Errorf("-server: unknown kind %q; known: %s", k, strings.Join(serverKinds, ", "))
		}
	}
	return kinds, nil
}
