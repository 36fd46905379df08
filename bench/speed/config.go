package speed

import (
	"fmt"
	"slices"
	"time"

	"github.com/locklab/locklab/bench/registry"
)

// Scenario names accepted by -scenarios.
const (
	ScUncontended = "uncontended" // 1 client, a fresh key per acquire+release pair
	ScContended   = "contended"   // N clients on one key
	ScKeys        = "keys"        // many clients over many keys, a random key per acquisition
	scRTT         = "rtt"         // uncontended and contended through a latency proxy
)

var AllScenarios = []string{ScUncontended, ScContended, ScKeys, scRTT}

// HeadlineScenarios are the scenarios of the default plan: those the
// verdicts are taken from (one key under contention, many keys, no
// contention; five servers and beyond Redis at the contended cell).
var HeadlineScenarios = []string{ScUncontended, ScContended, ScKeys}

// Defaults of a run. The default plan (make bench) runs the headline cell
// of each verdict's scenario (headlineCells: uncontended, contended with 32
// clients and a 1ms hold, keys with 64 clients and hold 0) in 3 rounds of
// 800ms runs, the A/A control (raw-again) included: see the plan printed
// at start, and README's "What the bench measures" for the minutes. -full
// (make bench-full) runs every cell of every scenario (the rtt scenario
// too), every -clients value and every -hold.
const (
	DefaultDuration = 800 * time.Millisecond
	DefaultRounds   = 3
	DefaultKeys     = 1024
	DefaultRTT      = time.Millisecond
	DefaultTTL      = 8 * time.Second // redsync's default expiry
	DefaultMaxOps   = 2_000_000       // per run, on top of the duration
)

var (
	DefaultClients     = []int{1, 2, 8, 32}
	DefaultKeysClients = []int{64}
	defaultHolds       = []time.Duration{0, time.Millisecond}
)

// The -quick preset (make bench-quick): every scenario, 8 clients, both
// holds, one round of 250ms runs: 56-80s on the 2-core machine (56-60s on
// a quiet one), of which the locks on etcd, ZooKeeper and PostgreSQL take
// 15-35s, much of it starting those servers (one after another, when
// their locks first connect; starting them at once saved 1-3s of 57-60s).
const (
	QuickDuration = 250 * time.Millisecond
	QuickRounds   = 1
)

var QuickClients = []int{8}

// Config is the parsed command line.
type Config struct {
	Out       string // results directory; "" means bench/results/<UTC timestamp>
	Scenarios []string
	Impls     []string // as given; resolved by resolveImpls
	Clients   []int
	KeysCl    []int // clients of the keys scenario
	Holds     []time.Duration
	Duration  time.Duration
	Rounds    int
	Keys      int
	Rtt       time.Duration
	Rate      float64 // open-loop arrivals per second; 0 = closed loop
	Addrs     []string
	Deploy    registry.Deployment // -addrs cluster://... or sentinel://...; Addrs is then empty
	Servers   []string            // -server: kinds of Redis server, each lock runs on each; nil = the rig's choice
	Client    []string            // -client: kinds of go-redis client (clients.go); nil = the default's choice
	Quick     bool
	// Headline keeps only the headline cell of each scenario
	// (headlineCells): the default plan, unless -full, -quick or an explicit
	// -scenarios, -clients, -keys-clients or -hold asks for more.
	Headline bool
	TTL      time.Duration
	MaxOps   int64
	Plots    bool
	Check    string // "async" or "sync": how the ledger's updates are sent
	Cpuprof  string // write a CPU profile of the bench process here
	// A bench split across workers (-worker i/N, split.go): this process
	// is worker Worker of Workers (0 and 0 in a single process), RunID
	// names the shared keys, Start is when the workers begin (zero: at
	// once), BarrierTimeout bounds each wait at a barrier.
	Worker, Workers int
	RunID           string
	Start           time.Time
	BarrierTimeout  time.Duration
	// The fault scoreboard (-scenarios faults).
	Faults       []string // schedule ids
	FaultRuns    int
	Seed         uint64
	AllTimelines bool
}

func (c *Config) Validate() error {
	switch {
	case c.Duration <= 0:
		return fmt.Errorf("-duration must be > 0, got %v", c.Duration)
	case c.Rounds < 1:
		return fmt.Errorf("-rounds must be >= 1, got %d", c.Rounds)
	case c.Keys < 1:
		return fmt.Errorf("-keys must be >= 1, got %d", c.Keys)
	case c.Rtt <= 0 && slices.Contains(c.Scenarios, scRTT):
		return fmt.Errorf("-rtt must be > 0 for the rtt scenario, got %v", c.Rtt)
	case c.Rate < 0:
		return fmt.Errorf("-rate must be >= 0, got %v", c.Rate)
	case c.TTL <= 0:
		return fmt.Errorf("-ttl must be > 0, got %v", c.TTL)
	case c.MaxOps < 1:
		return fmt.Errorf("-max-ops must be >= 1, got %d", c.MaxOps)
	case c.Check != "async" && c.Check != "sync":
		return fmt.Errorf("-check must be async or sync, got %q", c.Check)
	case c.FaultRuns < 1 || c.FaultRuns > 1000:
		return fmt.Errorf("-fault-runs must be 1..1000, got %d", c.FaultRuns)
	}
	for _, n := range c.Clients {
		if n < 1 || n > 1024 {
			return fmt.Errorf("-clients: %d is out of range 1..1024", n)
		}
	}
	for _, n := range c.KeysCl {
		if n < 2 || n > 1024 {
			return fmt.Errorf("-keys-clients: %d is out of range 2..1024", n)
		}
	}
	for _, h := range c.Holds {
		if h < 0 || h > c.TTL/2 {
			return fmt.Errorf("-hold: %v is out of range 0..ttl/2 (%v)", h, c.TTL/2)
		}
	}
	return nil
}
