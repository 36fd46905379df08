package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/locklab/locklab/bench/registry"
	"github.com/locklab/locklab/bench/speed"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Machine describes where and how the bench ran, for the report.
type Machine struct {
	Start        time.Time `json:"start"`
	Command      string    `json:"command"`
	CPUs         int       `json:"cpus"`
	GOMAXPROCS   int       `json:"gomaxprocs"`
	GoVersion    string    `json:"go_version"`
	OSArch       string    `json:"os_arch"`
	CPUModel     string    `json:"cpu_model"`
	RedisVersion string    `json:"redis_version"`
	// ServerVersions are the versions of each -server kind (Valkey's own
	// valkey_version); absent without -server.
	ServerVersions map[string]string `json:"server_versions,omitempty"`
	Servers        string            `json:"servers"`
	Modules        [][2]string       `json:"modules"`
	// RedisBenchmark is redis-benchmark's SET rate on the first server at
	// each concurrency of the run, measured in the same run.
	RedisBenchmark *speed.RedisBench `json:"redis_benchmark,omitempty"`
	// Workers and RunID are set on a bench split across workers and merged
	// (-worker i/N, bench merge): the machine, the command and
	// redis-benchmark above are worker 1's.
	Workers int    `json:"workers,omitempty"`
	RunID   string `json:"run_id,omitempty"`
}

// interestingModules are listed with their versions in the report.
var interestingModules = []string{
	"github.com/redis/go-redis/v9", "github.com/go-redsync/redsync/v4",
	"github.com/bsm/redislock", "github.com/redis/rueidis",
	"github.com/HdrHistogram/hdrhistogram-go", "gonum.org/v1/plot",
}

func DescribeMachine(args []string) Machine {
	m := Machine{
		Start:      time.Now().UTC(),
		Command:    "go run ./bench " + strings.Join(args, " "),
		CPUs:       runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		GoVersion:  runtime.Version(),
		OSArch:     runtime.GOOS + "/" + runtime.GOARCH,
		CPUModel:   cpuModel(),
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if slices.Contains(interestingModules, d.Path) {
				v := d.Version
				if d.Replace != nil {
					v += " => " + d.Replace.Path + " " + d.Replace.Version
				}
				m.Modules = append(m.Modules, [2]string{d.Path, v})
			}
		}
	}
	return m
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// Results is everything the output files are made from.
type Results struct {
	cfg    *speed.Config
	mach   Machine
	Cells  []speed.Cell
	impls  []*registry.Lock
	runs   []*speed.RunResult
	Rows   []speed.Row
	Hists  map[speed.GroupKey]*hdrhistogram.Histogram // wait, merged over rounds
	handof map[speed.GroupKey]*hdrhistogram.Histogram // handoff, merged over rounds
}

func NewResults(cfg *speed.Config, mach Machine, cs []speed.Cell, impls []*registry.Lock, runs []*speed.RunResult) *Results {
	res := &Results{cfg: cfg, mach: mach, Cells: cs, impls: impls, runs: runs,
		Hists: map[speed.GroupKey]*hdrhistogram.Histogram{}, handof: map[speed.GroupKey]*hdrhistogram.Histogram{}}
	res.Rows = speed.Aggregate(runs, cs, impls, cfg.Duration)
	for _, r := range runs {
		k := speed.GroupKey{Impl: r.Spec.Impl.Name, Cell: r.Spec.Cell}
		if res.Hists[k] == nil {
			res.Hists[k], res.handof[k] = speed.NewHist(), speed.NewHist()
		}
		res.Hists[k].Merge(r.Wait)
		res.handof[k].Merge(r.Handoff)
	}
	return res
}

// Write writes every output file into dir and returns the tables for
// stdout.
func (res *Results) Write(dir string) (string, error) {
	for _, sub := range []string{"hgrm", "plots"} {
		if sub == "plots" && !res.cfg.Plots {
			continue
		}
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return "", err
		}
	}
	for i := range res.Rows {
		res.Rows[i].Workers, res.Rows[i].RunID = res.mach.Workers, res.mach.RunID
	}
	js, err := json.MarshalIndent(res.Rows, "", "  ")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "summary.json"), append(js, '\n'), 0o644); err != nil {
		return "", err
	}
	if err := res.writeHgrm(filepath.Join(dir, "hgrm")); err != nil {
		return "", err
	}
	var plots map[string][]string
	if res.cfg.Plots {
		if plots, err = res.WritePlots(filepath.Join(dir, "plots")); err != nil {
			return "", err
		}
	}
	tables := res.Tables()
	var md bytes.Buffer
	fmt.Fprintf(&md, "# locklab bench, %s\n\n", res.mach.Start.Format(time.RFC3339))
	fmt.Fprintf(&md, "Command: `%s`\n\n", res.mach.Command)
	if w := res.mach.Workers; w > 0 {
		fmt.Fprintf(&md, "Workers: %d workers, run id %s, merged with `go run ./bench merge`. Each cell's clients were split\n"+
			"across the workers, which started each run together (barriers on the first server); the command\n"+
			"above, the machine and redis-benchmark are worker 1's. The server figures (commands, server CPU)\n"+
			"are the deployment's, taken by worker 1 around every worker's load; client CPU/acq is all\n"+
			"the workers' CPU over all their acquisitions; hand-offs are seen only between two clients of\n"+
			"one worker.\n\n", w, res.mach.RunID)
	}
	// The verdicts first (the same as report.html's, htmlreport.VerdictsOf),
	// with the tables that fit a screen; the rest is the appendix.
	verdicts, err := verdictSection(js, htmlLocks())
	if err != nil {
		return "", err
	}
	md.WriteString(verdicts)
	md.WriteString("## Appendix\n\nEverything else this run measured: the summary of every cell, the machine, the method, the tables and the plots.\n\n")
	md.WriteString(res.Summary())
	md.WriteString(res.ServerSection()) // Valkey/Redis, with -server redis,valkey (summary.go)
	md.WriteString(res.ClientSection()) // AutoPipeliner / own clients, with -client (clients.go)
	res.header(&md)
	md.WriteString(tables)
	md.WriteString(res.chapterSection()) // the chapter's claims, when locks on other systems ran (chapter.go)
	res.plotSection(&md, plots)
	if err := os.WriteFile(filepath.Join(dir, "report.md"), md.Bytes(), 0o644); err != nil {
		return "", err
	}
	return tables, nil
}

// writeHgrm writes one percentile file per histogram, values in ms
// (PercentilesPrint with 5 ticks per half distance, value scale 1000 on µs).
func (res *Results) writeHgrm(dir string) error {
	write := func(name string, h *hdrhistogram.Histogram) error {
		var b bytes.Buffer
		if _, err := h.PercentilesPrint(&b, 5, 1000); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o644)
	}
	for k, h := range res.Hists {
		stem := k.Cell.ID() + "_" + k.Impl
		if err := write(stem+".hgrm", h); err != nil {
			return err
		}
		if hh := res.handof[k]; hh.TotalCount() > 0 {
			if err := write(stem+".handoff.hgrm", hh); err != nil {
				return err
			}
		}
	}
	return nil
}

type scenarioHold struct {
	Scenario     string
	Hold         time.Duration
	MultiClients bool
}

// ScenarioHolds lists the (scenario, hold) groups in cell order.
func (res *Results) ScenarioHolds() []scenarioHold {
	var out []scenarioHold
	for _, c := range res.Cells {
		i := slices.IndexFunc(out, func(g scenarioHold) bool { return g.Scenario == c.Scenario && g.Hold == c.Hold })
		if i < 0 {
			out = append(out, scenarioHold{Scenario: c.Scenario, Hold: c.Hold})
			continue
		}
		out[i].MultiClients = true
	}
	return out
}

func (res *Results) RowsOf(scenario string, hold time.Duration) []speed.Row {
	var out []speed.Row
	for _, r := range res.Rows {
		// The plots show the first -server kind; the Valkey/Redis table compares them.
		if r.Scenario == scenario && r.HoldUs == float64(hold.Microseconds()) && r.Server == res.firstServer() {
			out = append(out, r)
		}
	}
	return out
}

func (res *Results) header(b *bytes.Buffer) {
	m, c := res.mach, res.cfg
	fmt.Fprintf(b, "## Machine and versions\n\n")
	fmt.Fprintf(b, "| | |\n|---|---|\n")
	fmt.Fprintf(b, "| CPU | %d × %s |\n| GOMAXPROCS | %d |\n| Go | %s %s |\n", m.CPUs, m.CPUModel, m.GOMAXPROCS, m.GoVersion, m.OSArch)
	fmt.Fprintf(b, "| Redis | redis-server %s (%s) |\n", m.RedisVersion, m.Servers)
	for i, k := range c.Servers {
		which := "the servers above"
		if i > 0 {
			which = "as many servers again, started the same way"
		}
		fmt.Fprintf(b, "| -server %s | %s-server %s, %s |\n", k, k, m.ServerVersions[k], which)
	}
	for _, mod := range m.Modules {
		fmt.Fprintf(b, "| %s | %s |\n", mod[0], mod[1])
	}
	if m.RedisBenchmark != nil {
		rb := m.RedisBenchmark
		for _, r := range rb.Rates {
			if len(r.PerRound) > 0 {
				fmt.Fprintf(b, "| redis-benchmark -c %d SET | %.0f/s (p50 %.3f ms; %d requests, %d rounds) |\n", r.Clients, r.PerSec, r.P50Ms, r.Requests, len(r.PerRound))
			}
		}
		if rb.Error != "" {
			fmt.Fprintf(b, "| redis-benchmark | not measured: %s |\n", rb.Error)
		}
	}
	mode := "closed loop"
	if c.Rate > 0 {
		mode = fmt.Sprintf("open loop, %.0f arrivals/s per run", c.Rate)
	}
	fmt.Fprintf(b, "\nSettings: %s; each run %s (at most %d acquisitions), %d round(s), TTL %s for every lock, keys scenario over %d keys, rtt scenario +%s each way, violation check %s.\n\n",
		mode, c.Duration, c.MaxOps, c.Rounds, c.TTL, c.Keys, c.Rtt, c.Check)
	b.WriteString(methodText)
}

const methodText = `## Method

- Every contending client has its own connection pool (its own go-redis
  client per server, or its own rueidis client), as a separate process would.
  Closed loop: each client wants the lock, holds it for the hold time, releases
  it, and starts again at once. **Wait** runs from when the client first wanted
  the lock until it holds it, across give-ups: a lock call that returns the
  library's "failed" error is counted in *gave up* and retried with the same
  start. A wait still going when the run ends is not an acquisition, but it is
  in the wait figures at its length then, a lower bound (**cut off** counts
  them, with the longest): leaving it out would drop exactly the longest
  waits, such as a client that waited the whole run and never got the lock.
  In the uncontended scenario a run is acquire+release pairs on fresh keys,
  and wait is the acquire call.
- Open loop (-rate): arrivals at fixed intervals from a precomputed schedule;
  wait runs from the scheduled arrival, so queueing behind busy clients counts
  (no coordinated omission); arrivals due but not yet served when the run
  ends are cut off like any other wait.
- Rounds run the implementations in an order rotated by one each round.
  Tables show the **median over rounds** (ops/s range min–max). Ratios (×) are
  to redsync-1 (redsync-5 for 5-node locks) **in the same round**, then the
  median of those ratios.
- **The floor.** raw runs in every round like any lock: go-redis SET key
  token NX PX ttl, then one EVALSHA of a compare-and-delete script, with a
  fresh crypto/rand token and no library around them (refused, it sends the
  SET again after 1 ms); raw-5 sends the same to five servers in parallel and
  holds on a majority. raw+receipt and raw-5+receipt release so that a
  resend answers right (the compare-and-delete leaves a receipt key and
  answers from it), as our locks do and no peer does: their × floor is what
  that costs. **× floor** is a lock's ops/s over raw's (raw-5's for
  5-node locks) in the same round. raw-again is raw run a second time in
  each round, the A/A control: its × floor is the ratio of two runs of
  the same code, so its spread over rounds (the summary's "A/A") is how far
  apart this machine puts equal locks. In contended tables the **FIFO floor** is
  the wait p99 of a perfect queue with the run's own hold and hand-off,
  (N−1) × (held p50 + handoff p50), and **p99 × floor** the wait p99 over it,
  per round, then the median. redis-benchmark's SET rate on the first server,
  at each concurrency of the run, is measured before each round's runs (in
  the machine table and machine.json): a lock needs two commands, so its
  pairs/s are at most half of it.
- **Redis cmds/acq** is the delta of INFO commandstats over every server,
  commands run inside Lua scripts included (an EVALSHA of a release script is
  EVALSHA + GET + DEL), divided by acquisitions. Admin commands are excluded
  (INFO, HELLO, CLIENT *, PING, CLUSTER *, COMMAND, CONFIG, SCAN, ...), and the
  violation counter's own INCR/DECR are subtracted exactly. **Client cmds/acq**
  is what the lock handed to go-redis (round trips, in effect); not measured
  for rueidislock.
- **Server CPU/acq** is the servers' CPU time (INFO cpu) per acquisition;
  **client CPU/acq** is the bench process's own (getrusage, user + system)
  during the load: the lock's code, its client library and the Go runtime,
  plus the harness's share (histograms, the violation counter), alike for
  every lock; in rtt cells it includes the in-process latency proxy. Both
  are medians of the rounds.
- **Violations**: a shared occupancy counter on the first server: each holder
  INCRs it on entering the critical section and DECRs it before releasing, over
  one pipelined connection in the order the holders issue them; an INCR that
  returns more than 1 is a violation. With -check async (the default) the
  holder does not wait for the replies, so the check adds no round trip; with
  -check sync each update waits for its reply inside the critical section. **Handoff**: from the moment a holder starts to release until the
  next holder (one that was already waiting) has the lock, on one clock.
- Jain's index is over per-client acquisition counts (1 = equal shares).
- **held p50** is the hold as it really was: from Lock returning to the start
  of Unlock. On Linux, on one key, the hold is a nanosleep(2), not a
  time.Sleep: the Go runtime rounds a timer's wait to whole milliseconds
  whenever the process goes idle mid-sleep, which stretched a 1 ms hold to
  1.6 ms for locks whose other clients (in this one process) were busy
  during it, and not for others. In the keys cell, where many holds
  overlap, it is a time.Sleep: a thread in nanosleep keeps a Go P parked,
  and dozens at once stalled the whole process for the runtime's 10 ms
  network poll. The best possible contended rate is about
  1 / (held + handoff).

`

// column is one column of the scenario tables.
type column struct {
	head string
	left bool // text, left-aligned
	val  func(r speed.Row) string
}

// tableColumns returns the columns of one scenario's table. Contended
// scenarios also get the FIFO floor and each wait p99 against it.
func tableColumns(contended bool) []column {
	cols := []column{
		{head: "impl", left: true, val: func(r speed.Row) string { return r.Impl }},
		{head: "N", val: func(r speed.Row) string { return fmt.Sprint(r.Clients) }},
		{head: "hold (held p50)", val: func(r speed.Row) string { return fmtHoldUs(r.HoldUs) + " (" + fmtUs(r.HeldP50Us) + ")" }},
		{head: "ops/s", val: fmtOps},
		{head: "range", val: func(r speed.Row) string { return fmt.Sprintf("%.0f–%.0f", r.OpsPerSecMin, r.OpsPerSecMax) }},
		{head: "× redsync", val: func(r speed.Row) string { return FmtRatio(r.OpsRatio) }},
		{head: "× floor", val: func(r speed.Row) string { return FmtRatio(r.OpsFloorRatio) }},
		{head: "wait p50", val: func(r speed.Row) string { return fmtUs(r.WaitP50Us) }},
		{head: "p99", val: func(r speed.Row) string { return fmtUs(r.WaitP99Us) }},
		{head: "p99 × redsync", val: func(r speed.Row) string { return FmtRatio(r.WaitP99Ratio) }},
	}
	if contended {
		cols = append(cols,
			column{head: "FIFO floor", val: fmtFIFOFloor},
			column{head: "p99 × floor", val: func(r speed.Row) string { return FmtRatio(r.WaitP99FloorRatio) }})
	}
	return append(cols,
		column{head: "p99.9", val: func(r speed.Row) string { return fmtUs(r.WaitP999Us) }},
		column{head: "p99.9 × redsync", val: func(r speed.Row) string { return FmtRatio(r.WaitP999Ratio) }},
		column{head: "max (worst)", val: func(r speed.Row) string { return fmtUs(r.WaitMaxUs) + " (" + fmtUs(r.WaitMaxWorstUs) + ")" }},
		column{head: "cut off (longest)", val: func(r speed.Row) string { return fmt.Sprintf("%d (%s)", r.CutOff, fmtUs(r.CutOffMaxUs)) }},
		column{head: "Jain", val: func(r speed.Row) string { return fmt.Sprintf("%.3f", r.Jain) }},
		column{head: "client min/max", val: func(r speed.Row) string { return fmt.Sprintf("%.0f/%.0f", r.PerClientMin, r.PerClientMax) }},
		column{head: "Redis cmds/acq", val: func(r speed.Row) string { return fmt.Sprintf("%.2f", r.RedisCmdsPerOp) }},
		column{head: "client cmds/acq", val: func(r speed.Row) string { return FmtOptional(r.ClientCmdsPerOp) }},
		column{head: "server CPU/acq", val: func(r speed.Row) string { return fmtUs(r.ServerCPUUsPerOp) }},
		column{head: "client CPU/acq", val: func(r speed.Row) string {
			if r.ClientCPUUsPerOp == nil {
				return "–"
			}
			return fmtUs(*r.ClientCPUUsPerOp)
		}},
		column{head: "gave up", val: func(r speed.Row) string { return fmt.Sprint(r.GaveUp) }},
		column{head: "violations", val: func(r speed.Row) string { return fmt.Sprint(r.Violations) }},
		column{head: "handoff p50 / p99", val: func(r speed.Row) string {
			if r.HandoffSamples == 0 {
				return "–"
			}
			return fmtUs(r.HandoffP50Us) + " / " + fmtUs(r.HandoffP99Us)
		}},
		column{head: "errors", val: func(r speed.Row) string { return fmt.Sprint(r.Errors) }},
	)
}

func fmtOps(r speed.Row) string {
	ops := fmt.Sprintf("%.0f", r.OpsPerSec)
	if r.Saturated != nil && *r.Saturated {
		ops += " (saturated)"
	}
	return ops
}

func fmtFIFOFloor(r speed.Row) string {
	if r.FIFOFloorUs <= 0 {
		return "–"
	}
	return fmtUs(r.FIFOFloorUs)
}

// isContendedScenario reports whether a row scenario is one key shared by
// every client, where the FIFO floor applies.
func isContendedScenario(sc string) bool {
	return sc == speed.ScContended || sc == speed.RowRTTContended
}

// scenarios returns the row scenarios in cell order.
func (res *Results) scenarios() []string {
	var out []string
	for _, c := range res.Cells {
		if !slices.Contains(out, c.Scenario) {
			out = append(out, c.Scenario)
		}
	}
	return out
}

// scenarioRows returns the rows of one scenario, by clients then hold.
func (res *Results) scenarioRows(sc string) []speed.Row {
	var rows []speed.Row
	for _, r := range res.Rows {
		if r.Scenario == sc {
			rows = append(rows, r)
		}
	}
	first := map[string]int{} // an impl's first place, so that its rows on each -server kind sit together
	for i, r := range rows {
		if _, ok := first[r.Impl]; !ok {
			first[r.Impl] = i
		}
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].Clients != rows[j].Clients {
			return rows[i].Clients < rows[j].Clients
		}
		if rows[i].HoldUs != rows[j].HoldUs {
			return rows[i].HoldUs < rows[j].HoldUs
		}
		return first[rows[i].Impl] < first[rows[j].Impl]
	})
	return rows
}

// Tables renders one table per scenario.
func (res *Results) Tables() string {
	var b bytes.Buffer
	for _, sc := range res.scenarios() {
		rows := res.scenarioRows(sc)
		cols := tableColumns(isContendedScenario(sc))
		if len(res.cfg.Servers) > 1 {
			cols = slices.Insert(cols, 1, column{head: "server", left: true, val: func(r speed.Row) string { return r.Server }})
		}
		fmt.Fprintf(&b, "## %s\n\n", sc)
		writeTable(&b, cols, rows)
		b.WriteString("\n")
		for _, r := range rows {
			if len(res.cfg.Servers) > 1 {
				r.Impl += " on " + r.Server // the notes name the server too
			}
			if r.LastError != "" {
				fmt.Fprintf(&b, "- %s N=%d hold %s: %d errors, last: %s\n", r.Impl, r.Clients, fmtHoldUs(r.HoldUs), r.Errors, r.LastError)
			}
			if r.LeftoverKeys > 0 {
				fmt.Fprintf(&b, "- %s N=%d hold %s: %d keys without a TTL left behind after its runs (removed)\n", r.Impl, r.Clients, fmtHoldUs(r.HoldUs), r.LeftoverKeys)
			}
			if r.ExpiringKeys > 0 {
				fmt.Fprintf(&b, "- %s N=%d hold %s: %d keys with a TTL still there after its runs, %.2f per acquisition (they would expire; removed)\n",
					r.Impl, r.Clients, fmtHoldUs(r.HoldUs), r.ExpiringKeys, float64(r.ExpiringKeys)/float64(max(r.Acquisitions, 1)))
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// writeTable writes a markdown table of rows.
func writeTable(b *bytes.Buffer, cols []column, rows []speed.Row) {
	b.WriteString("|")
	for _, c := range cols {
		b.WriteString(" " + c.head + " |")
	}
	b.WriteString("\n|")
	for _, c := range cols {
		if c.left {
			b.WriteString("---|")
		} else {
			b.WriteString("---:|")
		}
	}
	b.WriteString("\n")
	for _, r := range rows {
		b.WriteString("|")
		for _, c := range cols {
			b.WriteString(" " + c.val(r) + " |")
		}
		b.WriteString("\n")
	}
}

func (res *Results) plotSection(b *bytes.Buffer, plots map[string][]string) {
	if plots == nil {
		b.WriteString("## Plots\n\nNot drawn (-plots=false). Percentile files (.hgrm, values in ms) are in `hgrm/`.\n")
		return
	}
	b.WriteString("## Plots\n\nPNG beside each SVG; percentile files (.hgrm, values in ms) in `hgrm/`.\n\n")
	for _, sec := range []struct{ key, title string }{
		{"latency", "Wait percentile distribution"},
		{"throughput", "Throughput vs clients"},
		{"p99", "p99 wait vs clients"},
		{"cmds", "Redis commands per acquisition"},
	} {
		if len(plots[sec.key]) == 0 {
			continue
		}
		fmt.Fprintf(b, "### %s\n\n", sec.title)
		for _, f := range plots[sec.key] {
			fmt.Fprintf(b, "![%s](plots/%s)\n\n", strings.TrimSuffix(f, ".svg"), f)
		}
	}
}

func fmtHoldUs(us float64) string { return speed.FmtHold(time.Duration(us) * time.Microsecond) }

// fmtUs prints a duration given in µs with a fitting unit.
func fmtUs(us float64) string {
	switch {
	case us >= 1e6:
		return fmt.Sprintf("%.2f s", us/1e6)
	case us >= 1e3:
		return fmt.Sprintf("%.1f ms", us/1e3)
	default:
		return fmt.Sprintf("%.0f µs", us)
	}
}

func FmtRatio(v *float64) string {
	if v == nil {
		return "–"
	}
	if *v < 0.1 {
		return fmt.Sprintf("%.3f×", *v)
	}
	return fmt.Sprintf("%.2f×", *v)
}

func FmtOptional(v *float64) string {
	if v == nil {
		return "–"
	}
	return fmt.Sprintf("%.2f", *v)
}

func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
