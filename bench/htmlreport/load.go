package htmlreport

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Lock is one lock the bench ran, as the report needs to know it.
type Lock struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"`   // "ours", "peer", "floor" or "naive"
	Nodes  int    `json:"nodes"`  // servers the lock uses: 1, or 5 for Redlock
	System string `json:"system"` // "redis", "etcd", "zookeeper", "postgres"
}

// The kinds of [Lock.Kind], as the bench names them.
const (
	KindOurs  = "ours"
	KindPeer  = "peer"
	KindFloor = "floor"
	KindNaive = "naive"
)

// row is the part of one summary.json line the report shows.
type row struct {
	Impl              string   `json:"impl"`
	Scenario          string   `json:"scenario"`
	Clients           int      `json:"clients"`
	HoldUs            float64  `json:"hold_us"`
	Keys              int      `json:"keys"`
	Nodes             int      `json:"nodes"`
	Server            string   `json:"server"` // "redis" or "valkey" with -server; else ""
	Client            string   `json:"client"` // "autopipe" for a lock on AutoPipeliners (-client); else ""
	OpsPerSec         float64  `json:"ops_per_sec"`
	OpsPerSecMin      float64  `json:"ops_per_sec_min"`
	OpsPerSecMax      float64  `json:"ops_per_sec_max"`
	WaitP50Us         float64  `json:"wait_p50_us"`
	WaitP99Us         float64  `json:"wait_p99_us"`
	WaitP999Us        float64  `json:"wait_p999_us"`
	Jain              float64  `json:"jain"`
	RedisCmdsPerOp    float64  `json:"redis_cmds_per_op"`
	GaveUp            int64    `json:"gave_up"`
	Violations        int64    `json:"violations"`
	Errors            int64    `json:"errors"`
	Rounds            int      `json:"rounds"`
	FloorTo           string   `json:"floor_to"`
	OpsFloorRatio     *float64 `json:"ops_floor_ratio"`
	FIFOFloorUs       float64  `json:"fifo_floor_us"`
	WaitP99FloorRatio *float64 `json:"wait_p99_floor_ratio"`
	PerRound          []struct {
		Round     int     `json:"round"`
		OpsPerSec float64 `json:"ops_per_sec"`
	} `json:"per_round"`
}

// faultRow is the part of one faults.json line the report shows.
type faultRow struct {
	Impl         string  `json:"impl"`
	Kind         string  `json:"kind"`
	Fault        string  `json:"fault"`
	FaultNumber  int     `json:"fault_number"`
	Title        string  `json:"title"`
	Runs         int     `json:"runs"`
	Inconclusive int     `json:"inconclusive"`
	UnsafeRuns   int     `json:"unsafe_runs"`
	StuckRuns    int     `json:"stuck_runs"`
	RefusedToRun int     `json:"refused_to_run"`
	MaxStallMs   float64 `json:"max_stall_ms"`
	Releases     int     `json:"releases"`
	// ReleasesFailedTookEffect: Unlocks that returned an error although
	// the lock was released.
	ReleasesFailedTookEffect int    `json:"releases_failed_took_effect"`
	Modeled                  bool   `json:"modeled"`
	NotRun                   string `json:"not_run"`
	Claim                    string `json:"claim"`
	Timeline                 string `json:"timeline"`
}

// results is what one results directory holds, read.
type results struct {
	dir      string
	locks    []Lock
	rows     []row
	faults   []faultRow
	plots    []plot            // plots/*.png, in the bench's order of sections
	heatmap  string            // faults_heatmap.png, relative; "" if none
	timeline map[string]string // relative path -> text, every file under timelines/
	raw      map[string][]byte // relative path -> bytes, of the pictures read
}

// plot is one picture of the report.
type plot struct {
	section string // "latency", "throughput", "p99", "cmds"
	path    string // relative to the results directory
}

// locksFile keeps the locks beside the results, so that a results
// directory holds all its report needs.
const locksFile = "locks.json"

// load reads the results directory dir. It needs summary.json or
// faults.json (or both) and locks.json.
func load(dir string) (*results, error) {
	res := &results{dir: dir, timeline: map[string]string{}}
	if err := readJSON(filepath.Join(dir, locksFile), &res.locks); err != nil {
		return nil, err
	}
	errS := readJSON(filepath.Join(dir, "summary.json"), &res.rows)
	errF := readJSON(filepath.Join(dir, "faults.json"), &res.faults)
	switch {
	case errS != nil && !errors.Is(errS, fs.ErrNotExist):
		return nil, errS
	case errF != nil && !errors.Is(errF, fs.ErrNotExist):
		return nil, errF
	case errS != nil && errF != nil:
		return nil, fmt.Errorf("htmlreport: %s holds neither summary.json nor faults.json", dir)
	}
	for _, l := range res.locks {
		if l.Name == "" || l.Kind == "" {
			return nil, fmt.Errorf("htmlreport: %s: a lock without a name or a kind: %+v", locksFile, l)
		}
	}
	pngs, err := filepath.Glob(filepath.Join(dir, "plots", "*.png"))
	if err != nil {
		return nil, err
	}
	for _, p := range pngs {
		base := filepath.Base(p)
		sec, _, ok := strings.Cut(base, "_")
		if !ok {
			sec = "other"
		}
		res.plots = append(res.plots, plot{section: sec, path: filepath.Join("plots", base)})
	}
	sort.SliceStable(res.plots, func(i, j int) bool {
		a, b := sectionRank(res.plots[i].section), sectionRank(res.plots[j].section)
		if a != b {
			return a < b
		}
		return res.plots[i].path < res.plots[j].path
	})
	if _, err := os.Stat(filepath.Join(dir, "faults_heatmap.png")); err == nil {
		res.heatmap = "faults_heatmap.png"
	}
	tl := filepath.Join(dir, "timelines")
	err = filepath.WalkDir(tl, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".txt") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		res.timeline[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return res, nil
}

// plotSections are the plot sections in the order the report shows them,
// with their titles.
var plotSections = []struct{ key, title string }{
	{"latency", "Wait percentile distribution"},
	{"throughput", "Throughput vs clients"},
	{"p99", "p99 wait vs clients"},
	{"cmds", "Redis commands per acquisition"},
}

func sectionRank(s string) int {
	i := slices.IndexFunc(plotSections, func(p struct{ key, title string }) bool { return p.key == s })
	if i < 0 {
		return len(plotSections)
	}
	return i
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("htmlreport: %s: %w", path, err)
	}
	return nil
}

// lock returns the lock named name, or a lock of unknown kind.
func (res *results) lock(name string) Lock {
	i := slices.IndexFunc(res.locks, func(l Lock) bool { return l.Name == name })
	if i < 0 {
		return Lock{Name: name, Kind: "unknown", Nodes: 1, System: "redis"}
	}
	return res.locks[i]
}
