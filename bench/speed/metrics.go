package speed

import (
	"github.com/locklab/locklab/bench/registry"
	"github.com/locklab/locklab/internal/measure"

	"math"
	"slices"
	"time"
)

// Median returns the median of xs (the mean of the middle two for an even
// count), or 0 for none.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// RatioMedian pairs each round's value with the baseline's value from the
// same round, and returns the median of those ratios (sameRoundRatios);
// with none it reports false.
func RatioMedian(vals, base map[int]float64) (float64, bool) {
	rs := SameRoundRatios(vals, base)
	if len(rs) == 0 {
		return 0, false
	}
	return Median(rs), true
}

// SameRoundRatios returns vals over base in each round that has both,
// sorted. Rounds missing on either side, with a zero baseline, or with a
// NaN are skipped.
func SameRoundRatios(vals, base map[int]float64) []float64 {
	var rs []float64
	for round, v := range vals {
		b, ok := base[round]
		if !ok || b == 0 || math.IsNaN(v) || math.IsNaN(b) {
			continue
		}
		rs = append(rs, v/b)
	}
	slices.Sort(rs)
	return rs
}

// RoundFigures are the per-round values rows are built from.
type RoundFigures struct {
	Round       int     `json:"round"`
	OpsPerSec   float64 `json:"ops_per_sec"`
	WaitP50Us   float64 `json:"wait_p50_us"`
	WaitP99Us   float64 `json:"wait_p99_us"`
	WaitP999Us  float64 `json:"wait_p999_us"`
	WaitMaxUs   float64 `json:"wait_max_us"`
	CutOff      int64   `json:"cut_off"`        // waits cut off by the end of the run (in the wait figures)
	CutOffMaxUs float64 `json:"cut_off_max_us"` // the longest of them
	Jain        float64 `json:"jain"`
	CmdsPerOp   float64 `json:"redis_cmds_per_op"`
	// ServerCPUUsPerOp is the servers' CPU time per acquisition (see
	// measure.ParseCPU); the ledger's two commands are in it, as in every
	// lock's figure.
	ServerCPUUsPerOp float64 `json:"server_cpu_us_per_op"`
	// ClientCPUUsPerOp is this process's CPU time per acquisition during
	// the load (see row.ClientCPUUsPerOp); null when not measurable.
	ClientCPUUsPerOp *float64 `json:"client_cpu_us_per_op"`
	GaveUp           int64    `json:"gave_up"`
	Violations       int64    `json:"violations"`
	Acquired         int64    `json:"acquisitions"`
	ClientMin        int64    `json:"per_client_min"`
	ClientMax        int64    `json:"per_client_max"`
	ElapsedSecs      float64  `json:"elapsed_s"`
	HeldP50Us        float64  `json:"held_p50_us"`
	HandoffP50       float64  `json:"handoff_p50_us"`
	// FIFOFloorUs is the wait p99 of a perfect FIFO queue with this run's
	// own hold and hand-off: (N-1) x (held p50 + handoff p50); 0 when not
	// a contended run or no hand-off was seen.
	FIFOFloorUs float64 `json:"fifo_floor_us"`
}

// figures returns a run's figures, computed once (a run is not changed
// after execute returns it).
func figures(r *RunResult) RoundFigures {
	if r.Fig == nil {
		f := computeFigures(r)
		r.Fig = &f
	}
	return *r.Fig
}

func computeFigures(r *RunResult) RoundFigures {
	f := RoundFigures{
		Round:       r.Spec.Round,
		OpsPerSec:   r.opsPerSec(),
		Jain:        measure.Jain(r.PerClient),
		GaveUp:      r.gaveUp,
		Violations:  r.violations,
		Acquired:    r.Ops,
		ElapsedSecs: r.Elapsed.Seconds(),
		CutOff:      r.cutOff,
		CutOffMaxUs: float64(r.cutMax.Microseconds()),
	}
	if r.Wait.TotalCount() > 0 {
		f.WaitP50Us = float64(r.Wait.ValueAtQuantile(50))
		f.WaitP99Us = float64(r.Wait.ValueAtQuantile(99))
		f.WaitP999Us = float64(r.Wait.ValueAtQuantile(99.9))
		f.WaitMaxUs = float64(r.Wait.Max())
	}
	if r.Ops > 0 {
		f.CmdsPerOp = float64(r.Cmds.Total()) / float64(r.Ops)
		f.ServerCPUUsPerOp = float64(r.ServerCPU.Microseconds()) / float64(r.Ops)
		if r.ClientCPU >= 0 {
			v := float64(r.ClientCPU.Microseconds()) / float64(r.Ops)
			f.ClientCPUUsPerOp = &v
		}
	}
	if len(r.PerClient) > 0 {
		f.ClientMin, f.ClientMax = slices.Min(r.PerClient), slices.Max(r.PerClient)
	}
	if r.Held != nil && r.Held.TotalCount() > 0 {
		f.HeldP50Us = float64(r.Held.ValueAtQuantile(50))
	}
	if r.Handoff != nil && r.Handoff.TotalCount() > 0 {
		f.HandoffP50 = float64(r.Handoff.ValueAtQuantile(50))
		if c := r.Spec.Cell; c.HasFIFOFloor() {
			f.FIFOFloorUs = float64(c.Clients-1) * (f.HeldP50Us + f.HandoffP50)
		}
	}
	return f
}

// fifoFloor is the wait p99 a perfect FIFO queue would have in a contended
// run: each of the N-1 waiters ahead holds for the hold and hands over,
// so the last in line waits (N-1) x (held + hand-off). It is computed from
// the run's own held p50 and handoff p50, so a lock is measured against
// its own hand-off cost: how much its queue adds beyond waiting its turn.
func (c Cell) HasFIFOFloor() bool { return c.Keys == 1 && c.Clients >= 2 }

// Row is one line of summary.json: one (impl, scenario, clients, hold),
// medians over rounds unless a field says otherwise.
type Row struct {
	Impl     string  `json:"impl"`
	Scenario string  `json:"scenario"`
	Clients  int     `json:"clients"`
	HoldUs   float64 `json:"hold_us"`
	Keys     int     `json:"keys"`   // keys in play; 0 = a fresh key per pair
	RTTUs    float64 `json:"rtt_us"` // latency added each way by the proxy
	Nodes    int     `json:"nodes"`
	Mode     string  `json:"mode"` // "closed" or "open"
	// Server is the kind of Redis server (-server: redis or valkey);
	// absent without -server (the rig's choice, Redis unless LOCKLAB_SERVER).
	Server string `json:"server,omitempty"`
	// Client is "autopipe" for a lock run on go-redis AutoPipeliners
	// (-client; its name ends in @autopipe); absent on its own clients.
	Client string `json:"client,omitempty"`

	OpsPerSec    float64 `json:"ops_per_sec"` // acquisitions (pairs when uncontended) per second
	OpsPerSecMin float64 `json:"ops_per_sec_min"`
	OpsPerSecMax float64 `json:"ops_per_sec_max"`

	WaitP50Us      float64 `json:"wait_p50_us"`
	WaitP99Us      float64 `json:"wait_p99_us"`
	WaitP999Us     float64 `json:"wait_p999_us"`
	WaitMaxUs      float64 `json:"wait_max_us"`
	WaitMaxWorstUs float64 `json:"wait_max_worst_us"` // the largest over rounds
	// Waits still going when a run ended: each is in the wait figures at
	// its length then, a lower bound.
	CutOff      int64   `json:"cut_off"`        // total over rounds
	CutOffMaxUs float64 `json:"cut_off_max_us"` // the longest over rounds

	Jain         float64 `json:"jain"`
	PerClientMin float64 `json:"per_client_min"`
	PerClientMax float64 `json:"per_client_max"`

	RedisCmdsPerOp   float64            `json:"redis_cmds_per_op"`
	ServerCPUUsPerOp float64            `json:"server_cpu_us_per_op"` // median of the rounds' (roundFigures)
	RedisCmdMix      map[string]float64 `json:"redis_cmd_mix"`        // per acquisition, all rounds pooled
	ClientCmdsPerOp  *float64           `json:"client_cmds_per_op"`   // null when not measurable (rueidis)
	// ClientCPUUsPerOp is this process's CPU time (user and system) per
	// acquisition during the load, median of the rounds: the lock's client
	// code, go-redis, the Go runtime, and the harness's own share, alike
	// for every lock (and in rtt cells the in-process latency proxy, which
	// works in proportion to what the lock sends). null when not measurable.
	ClientCPUUsPerOp *float64 `json:"client_cpu_us_per_op"`

	GaveUp       int64   `json:"gave_up"` // total over rounds
	GaveUpPerSec float64 `json:"gave_up_per_sec"`
	Violations   int64   `json:"violations"` // total over rounds
	Errors       int64   `json:"errors"`     // total over rounds
	LastError    string  `json:"last_error,omitempty"`
	LeftoverKeys int     `json:"leftover_keys"` // total over rounds: keys without a TTL left after the runs
	ExpiringKeys int     `json:"expiring_keys"` // total over rounds: keys with a TTL left after the runs (they expire by themselves)

	HandoffP50Us   float64 `json:"handoff_p50_us"`
	HandoffP99Us   float64 `json:"handoff_p99_us"`
	HandoffSamples int64   `json:"handoff_samples"` // total over rounds
	ReleaseP50Us   float64 `json:"release_p50_us"`  // the Unlock call
	ReleaseP99Us   float64 `json:"release_p99_us"`
	HeldP50Us      float64 `json:"held_p50_us"` // from acquired to the start of the release: the hold as slept, plus the check

	Acquisitions int64   `json:"acquisitions"` // total over rounds
	Rounds       int     `json:"rounds"`
	DurationS    float64 `json:"duration_s"` // planned length of each run

	RatioTo       string   `json:"ratio_to,omitempty"`
	OpsRatio      *float64 `json:"ops_ratio"` // median over rounds of (this / ratio_to in the same round)
	WaitP50Ratio  *float64 `json:"wait_p50_ratio"`
	WaitP99Ratio  *float64 `json:"wait_p99_ratio"`
	WaitP999Ratio *float64 `json:"wait_p999_ratio"`
	WaitMaxRatio  *float64 `json:"wait_max_ratio"`

	// The floor: raw (raw-5 for 5-node locks), the bare commands with no
	// library, in the same round; and for contended runs the FIFO floor.
	FloorTo            string   `json:"floor_to,omitempty"`
	OpsFloorRatio      *float64 `json:"ops_floor_ratio"`       // median over rounds of (ops / floor_to's ops)
	FIFOFloorUs        float64  `json:"fifo_floor_us"`         // median over rounds; 0 when not contended
	WaitP99FloorRatio  *float64 `json:"wait_p99_floor_ratio"`  // median over rounds of (wait p99 / FIFO floor)
	WaitP99FloorRounds int      `json:"wait_p99_floor_rounds"` // rounds with a FIFO floor (a hand-off seen)

	OfferedPerSec *float64 `json:"offered_per_sec,omitempty"` // open loop
	Saturated     *bool    `json:"saturated,omitempty"`       // open loop: arrivals fell behind

	PerRound []RoundFigures `json:"per_round"`

	// Workers and RunID: a bench split across workers (-worker i/N) and
	// merged; absent from a single process's rows.
	Workers int    `json:"workers,omitempty"`
	RunID   string `json:"run_id,omitempty"`
}

// RequiredFields are the summary.json fields every row carries (the README's
// "What the bench measures" lists them).
var RequiredFields = []string{
	"impl", "scenario", "clients", "hold_us", "ops_per_sec", "wait_p50_us",
	"wait_p99_us", "wait_p999_us", "wait_max_us", "jain", "redis_cmds_per_op",
	"gave_up", "violations", "rounds",
}

// GroupKey identifies a row.
type GroupKey struct {
	Impl string
	Cell Cell
}

// Aggregate turns the runs into rows, in the order cells and impls were
// given, with same-round ratios to each impl's baseline where it ran.
func Aggregate(results []*RunResult, cs []Cell, impls []*registry.Lock, dur time.Duration) []Row {
	byKey := map[GroupKey][]*RunResult{}
	for _, r := range results {
		k := GroupKey{r.Spec.Impl.Name, r.Spec.Cell}
		byKey[k] = append(byKey[k], r)
	}
	var rows []Row
	for _, c := range cs {
		for _, im := range impls {
			rs := byKey[GroupKey{im.Name, c}]
			if len(rs) == 0 {
				continue
			}
			rw := buildRow(im, c, rs, dur)
			if b := im.Baseline(); b != im.Name {
				if brs := byKey[GroupKey{b, c}]; len(brs) > 0 {
					setRatios(&rw, rs, brs)
				}
			}
			if f := im.Floor(); f != im.Name {
				if frs := byKey[GroupKey{f, c}]; len(frs) > 0 {
					rw.FloorTo = f
					rw.OpsFloorRatio = RoundRatio(rs, frs, func(f RoundFigures) float64 { return f.OpsPerSec })
				}
			}
			setFIFOFloor(&rw)
			rows = append(rows, rw)
		}
	}
	return rows
}

func buildRow(im *registry.Lock, c Cell, rs []*RunResult, dur time.Duration) Row {
	rw := Row{
		Impl: im.Name, Scenario: c.Scenario, Clients: c.Clients,
		HoldUs: float64(c.Hold.Microseconds()), Keys: c.Keys,
		RTTUs: float64(c.Rtt.Microseconds()), Nodes: im.Nodes, Mode: "closed", Server: c.Server,
		Client: pipelinedClient(im),
		Rounds: len(rs), DurationS: dur.Seconds(), RedisCmdMix: map[string]float64{},
	}
	var ops, p50, p99, p999, mx, jn, cmin, cmax, cpo, gps, ccpo, hp50, hp99, rp50, rp99, held, scpu, ccpu []float64
	pooled := measure.Commands{}
	clientCmdsKnown := true
	for _, r := range rs {
		f := figures(r)
		rw.PerRound = append(rw.PerRound, f)
		ops = append(ops, f.OpsPerSec)
		p50 = append(p50, f.WaitP50Us)
		p99 = append(p99, f.WaitP99Us)
		p999 = append(p999, f.WaitP999Us)
		mx = append(mx, f.WaitMaxUs)
		rw.WaitMaxWorstUs = max(rw.WaitMaxWorstUs, f.WaitMaxUs)
		rw.CutOff += f.CutOff
		rw.CutOffMaxUs = max(rw.CutOffMaxUs, f.CutOffMaxUs)
		jn = append(jn, f.Jain)
		cmin = append(cmin, float64(f.ClientMin))
		cmax = append(cmax, float64(f.ClientMax))
		cpo = append(cpo, f.CmdsPerOp)
		scpu = append(scpu, f.ServerCPUUsPerOp)
		if r.Elapsed > 0 {
			gps = append(gps, float64(r.gaveUp)/r.Elapsed.Seconds())
		}
		if r.ClientCmds < 0 {
			clientCmdsKnown = false
		} else if r.Ops > 0 {
			ccpo = append(ccpo, float64(r.ClientCmds)/float64(r.Ops))
		}
		if f.ClientCPUUsPerOp != nil {
			ccpu = append(ccpu, *f.ClientCPUUsPerOp)
		}
		if r.Handoff.TotalCount() > 0 {
			hp50 = append(hp50, float64(r.Handoff.ValueAtQuantile(50)))
			hp99 = append(hp99, float64(r.Handoff.ValueAtQuantile(99)))
		}
		if r.Held != nil && r.Held.TotalCount() > 0 {
			held = append(held, float64(r.Held.ValueAtQuantile(50)))
		}
		if r.Release.TotalCount() > 0 {
			rp50 = append(rp50, float64(r.Release.ValueAtQuantile(50)))
			rp99 = append(rp99, float64(r.Release.ValueAtQuantile(99)))
		}
		pooled.Add(r.Cmds)
		rw.GaveUp += r.gaveUp
		rw.Violations += r.violations
		rw.Errors += r.errors
		if r.lastErr != "" {
			rw.LastError = r.lastErr
		}
		rw.LeftoverKeys += r.leftover
		rw.ExpiringKeys += r.Expiring
		rw.HandoffSamples += r.Handoff.TotalCount()
		rw.Acquisitions += r.Ops
		if r.Spec.Rate > 0 {
			rw.Mode = "open"
			offered := r.Spec.Rate
			rw.OfferedPerSec = &offered
			sat := r.saturated || (rw.Saturated != nil && *rw.Saturated)
			rw.Saturated = &sat
		}
	}
	rw.OpsPerSec, rw.OpsPerSecMin, rw.OpsPerSecMax = Median(ops), slices.Min(ops), slices.Max(ops)
	rw.WaitP50Us, rw.WaitP99Us, rw.WaitP999Us, rw.WaitMaxUs = Median(p50), Median(p99), Median(p999), Median(mx)
	rw.Jain, rw.PerClientMin, rw.PerClientMax = Median(jn), Median(cmin), Median(cmax)
	rw.RedisCmdsPerOp, rw.GaveUpPerSec = Median(cpo), Median(gps)
	rw.ServerCPUUsPerOp = Median(scpu)
	if clientCmdsKnown && len(ccpo) > 0 {
		v := Median(ccpo)
		rw.ClientCmdsPerOp = &v
	}
	if len(ccpu) > 0 {
		v := Median(ccpu)
		rw.ClientCPUUsPerOp = &v
	}
	rw.HandoffP50Us, rw.HandoffP99Us = Median(hp50), Median(hp99)
	rw.ReleaseP50Us, rw.ReleaseP99Us = Median(rp50), Median(rp99)
	rw.HeldP50Us = Median(held)
	if rw.Acquisitions > 0 {
		for k, v := range pooled {
			rw.RedisCmdMix[k] = float64(v) / float64(rw.Acquisitions)
		}
	}
	return rw
}

// PerRound maps each run's round to one of its figures.
func PerRound(results []*RunResult, get func(RoundFigures) float64) map[int]float64 {
	m := map[int]float64{}
	for _, r := range results {
		m[r.Spec.Round] = get(figures(r))
	}
	return m
}

// RoundRatio is the median over rounds of rs's figure over base's in the
// same round, or nil when no round has both.
func RoundRatio(rs, base []*RunResult, get func(RoundFigures) float64) *float64 {
	v, ok := RatioMedian(PerRound(rs, get), PerRound(base, get))
	if !ok {
		return nil
	}
	return &v
}

// setFIFOFloor fills the FIFO floor of a contended row from its rounds.
func setFIFOFloor(rw *Row) {
	var floors, ratios []float64
	for _, f := range rw.PerRound {
		if f.FIFOFloorUs <= 0 {
			continue
		}
		floors = append(floors, f.FIFOFloorUs)
		ratios = append(ratios, f.WaitP99Us/f.FIFOFloorUs)
	}
	if len(floors) == 0 {
		return
	}
	rw.FIFOFloorUs = Median(floors)
	v := Median(ratios)
	rw.WaitP99FloorRatio = &v
	rw.WaitP99FloorRounds = len(floors)
}

// setRatios fills the ratio fields: each round's value over the baseline's
// in the same round, then the median of those ratios.
func setRatios(rw *Row, rs, base []*RunResult) {
	ratio := func(get func(RoundFigures) float64) *float64 { return RoundRatio(rs, base, get) }
	rw.RatioTo = base[0].Spec.Impl.Name
	rw.OpsRatio = ratio(func(f RoundFigures) float64 { return f.OpsPerSec })
	rw.WaitP50Ratio = ratio(func(f RoundFigures) float64 { return f.WaitP50Us })
	rw.WaitP99Ratio = ratio(func(f RoundFigures) float64 { return f.WaitP99Us })
	rw.WaitP999Ratio = ratio(func(f RoundFigures) float64 { return f.WaitP999Us })
	rw.WaitMaxRatio = ratio(func(f RoundFigures) float64 { return f.WaitMaxUs })
}

// pipelinedClient is Row.Client: "autopipe" for a lock run on
// AutoPipeliners, "" otherwise.
func pipelinedClient(im *registry.Lock) string {
	if im.Pipelined {
		return registry.AutoPipe
	}
	return ""
}
