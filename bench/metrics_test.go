package main

import (
	"encoding/json"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/locklab/locklab/bench/registry"
	"github.com/locklab/locklab/bench/report"
	"github.com/locklab/locklab/bench/speed"
	"github.com/locklab/locklab/internal/measure"
)

func TestMedian(t *testing.T) {
	tests := []struct {
		xs   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{9, 1, 5}, 5},
		{[]float64{4, 1, 3, 2}, 2.5},
	}
	for _, tt := range tests {
		in := slices.Clone(tt.xs)
		if got := speed.Median(tt.xs); got != tt.want {
			t.Errorf("median(%v) = %v; want %v", tt.xs, got, tt.want)
		}
		if !slices.Equal(in, tt.xs) {
			t.Errorf("median reordered its input: %v, was %v", tt.xs, in)
		}
	}
}

// TestRatioMedian checks that ratios pair values from the same round and
// take the median of the ratios, which is not the ratio of the medians.
func TestRatioMedian(t *testing.T) {
	tests := []struct {
		name     string
		vals     map[int]float64
		base     map[int]float64
		want     float64
		wantOK   bool
		notRatio float64 // the ratio of medians, which must not be returned
	}{
		{
			// Round 1 is a "fast" round for both: same-round ratios are 1, 1, 1
			// while the ratio of medians is 20/15.
			name: "drift cancels within rounds",
			vals: map[int]float64{0: 10, 1: 30, 2: 20},
			base: map[int]float64{0: 10, 1: 30, 2: 20},
			want: 1, wantOK: true,
		},
		{
			name:     "median of per-round ratios",
			vals:     map[int]float64{0: 2, 1: 9, 2: 4},
			base:     map[int]float64{0: 1, 1: 10, 2: 2},
			want:     2, // ratios 2, 0.9, 2
			wantOK:   true,
			notRatio: 4.0 / 2.0,
		},
		{
			name:   "rounds missing on one side are skipped",
			vals:   map[int]float64{0: 2, 1: 3, 2: 100},
			base:   map[int]float64{0: 1, 1: 1},
			want:   2.5, // ratios 2 and 3
			wantOK: true,
		},
		{
			name:   "a zero baseline is skipped",
			vals:   map[int]float64{0: 5, 1: 6},
			base:   map[int]float64{0: 0, 1: 3},
			want:   2,
			wantOK: true,
		},
		{
			name: "nothing to pair",
			vals: map[int]float64{0: 5},
			base: map[int]float64{1: 5},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := speed.RatioMedian(tt.vals, tt.base)
			if ok != tt.wantOK || math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("ratioMedian(%v, %v) = %v, %v; want %v, %v", tt.vals, tt.base, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

// fakeRun makes a runResult as execute would, without Redis.
func fakeRun(im *registry.Lock, c speed.Cell, round int, ops int64, waitUs []int64, perClient []int64) *speed.RunResult {
	r := &speed.RunResult{
		Spec: speed.RunSpec{Impl: im, Cell: c, Round: round},
		Ops:  ops, Elapsed: time.Second, Wait: speed.NewHist(), Release: speed.NewHist(), Handoff: speed.NewHist(),
		PerClient: perClient, Cmds: measure.Commands{"set": ops, "evalsha": ops, "get": ops, "del": ops}, ClientCmds: 2 * ops,
	}
	for _, us := range waitUs {
		speed.Record(r.Wait, time.Duration(us)*time.Microsecond)
	}
	return r
}

// TestAggregateRatiosSameRound checks rows end to end without Redis: the
// medians, and the ratios taken round by round.
func TestAggregateRatiosSameRound(t *testing.T) {
	ours := &registry.Lock{Name: "ours", Nodes: 1}
	base := registry.Locks["redsync-1"]
	c := speed.Cell{Scenario: speed.ScContended, Clients: 2, Hold: time.Millisecond, Keys: 1}
	var runs []*speed.RunResult
	// The machine is twice as fast in round 1; ours is 2x the baseline in
	// every round.
	for round, speed := range []int64{1, 2, 1} {
		runs = append(runs,
			fakeRun(ours, c, round, 200*speed, []int64{100, 200, 300}, []int64{100 * speed, 100 * speed}),
			fakeRun(base, c, round, 100*speed, []int64{1000, 2000, 3000}, []int64{50 * speed, 50 * speed}))
	}
	rows := speed.Aggregate(runs, []speed.Cell{c}, []*registry.Lock{ours, base}, time.Second)
	if len(rows) != 2 {
		t.Fatalf("aggregate made %d rows; want 2", len(rows))
	}
	r := rows[0]
	if r.Impl != "ours" || r.RatioTo != "redsync-1" {
		t.Fatalf("row 0 = %s vs %q; want ours vs redsync-1", r.Impl, r.RatioTo)
	}
	if r.OpsPerSec != 200 || r.OpsPerSecMin != 200 || r.OpsPerSecMax != 400 {
		t.Errorf("ops/s = %v (%v-%v); want 200 (200-400)", r.OpsPerSec, r.OpsPerSecMin, r.OpsPerSecMax)
	}
	if r.OpsRatio == nil || *r.OpsRatio != 2 {
		t.Errorf("ops ratio = %v; want 2", r.OpsRatio)
	}
	if r.WaitP99Ratio == nil || math.Abs(*r.WaitP99Ratio-0.1) > 0.001 {
		t.Errorf("p99 ratio = %v; want 0.1", r.WaitP99Ratio)
	}
	if r.Jain != 1 || r.RedisCmdsPerOp != 4 || r.Rounds != 3 || r.Acquisitions != 800 {
		t.Errorf("jain %v, cmds/op %v, rounds %d, acquisitions %d; want 1, 4, 3, 800", r.Jain, r.RedisCmdsPerOp, r.Rounds, r.Acquisitions)
	}
	if r.ClientCmdsPerOp == nil || *r.ClientCmdsPerOp != 2 {
		t.Errorf("client cmds/op = %v; want 2", r.ClientCmdsPerOp)
	}
	if rows[1].OpsRatio != nil || rows[1].RatioTo != "" {
		t.Errorf("baseline row has a ratio to %q: %v; want none", rows[1].RatioTo, rows[1].OpsRatio)
	}
}

// TestSummarySchema checks that a row carries every field of the
// summary.json schema, with JSON types a reader can rely on.
func TestSummarySchema(t *testing.T) {
	c := speed.Cell{Scenario: speed.ScContended, Clients: 2, Keys: 1}
	rows := speed.Aggregate([]*speed.RunResult{fakeRun(registry.Locks["redsync-1"], c, 0, 10, []int64{5}, []int64{5, 5})},
		[]speed.Cell{c}, []*registry.Lock{registry.Locks["redsync-1"]}, time.Second)
	b, err := json.Marshal(rows)
	if err != nil {
		t.Fatal(err)
	}
	checkSchema(t, b, 1)
}

// checkSchema fails t unless b is a JSON array of n objects that each have
// every required field, numbers where numbers belong.
func checkSchema(t *testing.T, b []byte, n int) []map[string]any {
	t.Helper()
	var got []map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("summary is not a JSON array of objects: %v", err)
	}
	if len(got) != n {
		t.Fatalf("summary has %d rows; want %d", len(got), n)
	}
	for i, r := range got {
		for _, f := range speed.RequiredFields {
			v, ok := r[f]
			if !ok {
				t.Errorf("row %d lacks %q", i, f)
				continue
			}
			_, isNum := v.(float64)
			_, isStr := v.(string)
			if wantStr := f == "impl" || f == "scenario"; wantStr != isStr || !wantStr && !isNum {
				t.Errorf("row %d: %q = %#v has the wrong JSON type", i, f, v)
			}
		}
	}
	return got
}

func TestStepsRotate(t *testing.T) {
	a, b, c := &registry.Lock{Name: "a"}, &registry.Lock{Name: "b"}, &registry.Lock{Name: "c"}
	cs := []speed.Cell{{Scenario: speed.ScContended, Clients: 2}}
	var got []string
	for _, s := range speed.Steps(3, cs, []*registry.Lock{a, b, c}) {
		got = append(got, s.Impl.Name)
	}
	want := []string{"a", "b", "c", "b", "c", "a", "c", "a", "b"}
	if !slices.Equal(got, want) {
		t.Errorf("steps order = %v; want %v", got, want)
	}
}

// TestClientCPUPerAcquisition: a run's client CPU is divided by its
// acquisitions, a round that could not read it is left out of the row's
// median rather than counted as zero, and a row with no round measured
// has none.
func TestClientCPUPerAcquisition(t *testing.T) {
	ours := &registry.Lock{Name: "ours", Nodes: 1}
	c := speed.Cell{Scenario: speed.ScKeys, Clients: 2, Keys: 4}
	var runs []*speed.RunResult
	for round, cpu := range []time.Duration{3 * time.Millisecond, -1, 5 * time.Millisecond} {
		r := fakeRun(ours, c, round, 100, []int64{10}, []int64{50, 50})
		r.ClientCPU = cpu
		runs = append(runs, r)
	}
	rows := speed.Aggregate(runs, []speed.Cell{c}, []*registry.Lock{ours}, time.Second)
	got := rows[0]
	if got.ClientCPUUsPerOp == nil || *got.ClientCPUUsPerOp != 40 {
		t.Errorf("client CPU/acq = %s; want 40 (the median of 30 and 50 µs; the unread round left out)", report.FmtOptional(got.ClientCPUUsPerOp))
	}
	if f := got.PerRound[1]; f.ClientCPUUsPerOp != nil {
		t.Errorf("round 1, not measured: client CPU/acq = %v; want null", *f.ClientCPUUsPerOp)
	}
	for _, r := range runs {
		r.ClientCPU, r.Fig = -1, nil
	}
	if rows := speed.Aggregate(runs, []speed.Cell{c}, []*registry.Lock{ours}, time.Second); rows[0].ClientCPUUsPerOp != nil {
		t.Errorf("no round measured: client CPU/acq = %v; want null", *rows[0].ClientCPUUsPerOp)
	}
}
