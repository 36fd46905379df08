package main

import (
	"fmt"
	"slices"
	"time"
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
