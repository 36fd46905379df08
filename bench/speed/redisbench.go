package speed

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

// RedisBench is redis-benchmark's SET rate on the first server, measured in
// the same invocation as the locks (once per round, before the round's
// runs, so it sees the same state of the machine), at each concurrency the
// cells use. It is the ceiling of the server and the loopback for one
// command: a lock needs at least two (acquire and release), so its pairs/s
// are at most half of it.
type RedisBench struct {
	Binary string    `json:"binary,omitempty"`
	Error  string    `json:"error,omitempty"` // why there are no rates
	Rates  []setRate `json:"rates,omitempty"`
}

// setRate is one concurrency's SET rate.
type setRate struct {
	Clients  int       `json:"clients"`
	Requests int       `json:"requests"`    // per round
	PerSec   float64   `json:"set_per_sec"` // median over rounds
	P50Ms    float64   `json:"p50_ms"`      // median over rounds
	PerRound []float64 `json:"per_round"`
	p50s     []float64
}

// NewRedisBench looks redis-benchmark up next to the rig's redis-server,
// then on PATH; without it the rates are left out, with the reason.
func NewRedisBench(concurrency []int) *RedisBench {
	rb := &RedisBench{}
	bin, err := exec.LookPath("redis-benchmark")
	if err != nil {
		rb.Error = "redis-benchmark not found on PATH (Debian: apt-get install redis-tools)"
		return rb
	}
	rb.Binary = bin
	cs := slices.Clone(concurrency)
	slices.Sort(cs)
	for _, c := range slices.Compact(cs) {
		rb.Rates = append(rb.Rates, setRate{Clients: c, Requests: benchRequests(c)})
	}
	return rb
}

// benchRequests sizes one measurement to about a third of a second here
// (about 18k SETs/s with one client, 45-100k/s with many).
func benchRequests(clients int) int { return min(5000+500*clients, 40000) }

// Measure runs every concurrency once against addr, writing key (which
// the caller deletes), and records the results.
func (rb *RedisBench) Measure(ctx context.Context, addr, key string) {
	if rb.Binary == "" {
		return
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		rb.giveUp(err)
		return
	}
	for i := range rb.Rates {
		r := &rb.Rates[i]
		rps, p50, err := runRedisBenchmark(ctx, rb.Binary, host, port, r.Clients, r.Requests, key)
		if err != nil {
			rb.giveUp(err)
			return
		}
		r.PerRound = append(r.PerRound, rps)
		r.p50s = append(r.p50s, p50)
		r.PerSec, r.P50Ms = Median(r.PerRound), Median(r.p50s)
	}
}

// giveUp records err as the reason there are no rates and drops those
// measured so far.
func (rb *RedisBench) giveUp(err error) {
	rb.Error = err.Error()
	rb.Rates = nil
}

const redisBenchTimeout = 30 * time.Second

// runRedisBenchmark runs one SET benchmark and parses its --csv output:
// a header line, then "test","rps","avg_latency_ms","min_latency_ms",
// "p50_latency_ms",...
func runRedisBenchmark(ctx context.Context, bin, host, port string, clients, n int, key string) (rps, p50 float64, err error) {
	ctx, cancel := context.WithTimeout(ctx, redisBenchTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-h", host, "-p", port, "-c", strconv.Itoa(clients),
		"-n", strconv.Itoa(n), "--csv", "SET", key, "x")
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return 0, 0, fmt.Errorf("redis-benchmark -c %d: %v: %s", clients, err, strings.TrimSpace(stderr.String()))
	}
	recs, err := csv.NewReader(&out).ReadAll()
	if err != nil || len(recs) < 2 || len(recs[1]) < 5 {
		return 0, 0, fmt.Errorf("redis-benchmark -c %d: unexpected output %q", clients, out.String())
	}
	if rps, err = strconv.ParseFloat(recs[1][1], 64); err != nil {
		return 0, 0, fmt.Errorf("redis-benchmark -c %d: rps %q: %v", clients, recs[1][1], err)
	}
	if p50, err = strconv.ParseFloat(recs[1][4], 64); err != nil {
		return 0, 0, fmt.Errorf("redis-benchmark -c %d: p50 %q: %v", clients, recs[1][4], err)
	}
	return rps, p50, nil
}

// Rate returns the SET rate at clients, if measured.
func (rb *RedisBench) Rate(clients int) (setRate, bool) {
	if rb == nil {
		return setRate{}, false
	}
	for _, r := range rb.Rates {
		if r.Clients == clients && len(r.PerRound) > 0 {
			return r, true
		}
	}
	return setRate{}, false
}

// Line describes the rates in one sentence for the report.
func (rb *RedisBench) Line() string {
	if rb == nil {
		return ""
	}
	if len(rb.Rates) == 0 || len(rb.Rates[0].PerRound) == 0 {
		if rb.Error != "" {
			return "redis-benchmark: not measured (" + rb.Error + ")."
		}
		return ""
	}
	var parts []string
	for _, r := range rb.Rates {
		s := fmt.Sprintf("%s SET/s at %d client", fmtRate(r.PerSec), r.Clients)
		if r.Clients != 1 {
			s += "s"
		}
		if r.Clients == 1 {
			s += fmt.Sprintf(" (%s pairs/s)", fmtRate(r.PerSec/2))
		}
		parts = append(parts, s)
	}
	return fmt.Sprintf("redis-benchmark on the first server, in this run (median of %d): %s.",
		len(rb.Rates[0].PerRound), strings.Join(parts, ", "))
}

// fmtRate prints a rate as 18.4k or 950.
func fmtRate(v float64) string {
	if v >= 1000 {
		return fmt.Sprintf("%.1fk", v/1000)
	}
	return fmt.Sprintf("%.0f", v)
}
