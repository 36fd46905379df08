package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/locklab/locklab/bench/htmlreport"
	"github.com/locklab/locklab/bench/registry"
	"github.com/locklab/locklab/bench/speed"
)

// The verdicts open report.md, and the README's bench section is the same
// text made from a checked-in run (bench/testdata/readme), so that prose
// cannot drift from a measurement: TestReadmeBenchBlock fails when the
// README's block differs from what that run gives, and rewrites it with
// -update.

// htmlLocks returns every registered lock as the report package needs to
// know it (its kind, servers and system).
func htmlLocks() []htmlreport.Lock {
	var rows []htmlreport.Lock
	for _, im := range registry.Locks {
		rows = append(rows, htmlreport.Lock{Name: im.Name, Kind: string(im.Kind), Nodes: im.Nodes, System: registry.SystemOf(im)})
	}
	slices.SortFunc(rows, func(a, b htmlreport.Lock) int { return strings.Compare(a.Name, b.Name) })
	return rows
}

// verdictSection renders the verdicts of summary (the bytes of a
// summary.json) for locks, one sentence per job (htmlreport.VerdictsOf,
// the same verdicts report.html shows), then one short table per headline
// cell: our locks, the best peer and the floor.
func verdictSection(summary []byte, locks []htmlreport.Lock) (string, error) {
	vs, err := htmlreport.VerdictsOf(summary, locks)
	if err != nil {
		return "", err
	}
	var rows []speed.Row
	if err := json.Unmarshal(summary, &rows); err != nil {
		return "", fmt.Errorf("summary.json: %w", err)
	}
	var b bytes.Buffer
	b.WriteString("## Verdicts\n\n")
	for _, v := range vs {
		b.WriteString("- " + v.Sentence() + "\n")
	}
	b.WriteString("\nThe lock to pick has the best figure among ours and the peers' at the job's headline cell " +
		"(on a contended cell, among the locks within 10% of the best throughput, the lowest wait p99: " +
		"their waiters' wait is what sets them apart); " +
		"× best peer is a median of same-round ratios, and a lead inside the A/A spread " +
		"(raw-again over raw, two runs of the same code) is a tie. Everything else is in the appendix and summary.json.\n\n")
	b.WriteString(screenTables(rows, locks))
	return b.String(), nil
}

// screenTables renders one table per headline cell of rows (the first
// kind of server's): our locks, the best peer of each group (one server,
// five, beyond Redis) and the floor, with each one's figure, wait p99, ratio
// to its group's best peer (same-round median) and to the floor.
func screenTables(rows []speed.Row, locks []htmlreport.Lock) string {
	lockOf := func(name string) htmlreport.Lock {
		i := slices.IndexFunc(locks, func(l htmlreport.Lock) bool { return l.Name == name })
		if i < 0 {
			return htmlreport.Lock{Name: name, Kind: "unknown", Nodes: 1, System: registry.SysRedis}
		}
		return locks[i]
	}
	if len(rows) > 0 {
		first := rows[0].Server
		rows = slices.DeleteFunc(slices.Clone(rows), func(r speed.Row) bool { return r.Server != first || r.Client != "" })
	}
	type group struct {
		nodes  int
		others bool
	}
	groupOf := func(r speed.Row) group {
		l := lockOf(r.Impl)
		return group{l.Nodes, l.System != registry.SysRedis}
	}
	var b bytes.Buffer
	for _, h := range headlineRows(rows) {
		var in []speed.Row
		for _, r := range rows {
			if r.Scenario == h.Scenario && r.Clients == h.Clients && r.HoldUs == h.HoldUs && r.Keys == h.Keys {
				in = append(in, r)
			}
		}
		// One server, then five, then beyond Redis; in each, ours, the
		// best peer, the floor.
		kindRank := func(r speed.Row) int {
			return slices.Index([]string{string(registry.Ours), string(registry.Peer), string(registry.Floor)}, lockOf(r.Impl).Kind)
		}
		slices.SortStableFunc(in, func(a, b speed.Row) int {
			ga, gb := groupOf(a), groupOf(b)
			switch {
			case ga.others != gb.others:
				if ga.others {
					return 1
				}
				return -1
			case ga.nodes != gb.nodes:
				return ga.nodes - gb.nodes
			}
			return kindRank(a) - kindRank(b)
		})
		best := map[group]speed.Row{}
		for _, r := range in {
			if lockOf(r.Impl).Kind != string(registry.Peer) || r.Violations > 0 {
				continue
			}
			if p, ok := best[groupOf(r)]; !ok || r.OpsPerSec > p.OpsPerSec {
				best[groupOf(r)] = r
			}
		}
		unit := "acq/s"
		if h.Keys == 0 {
			unit = "pairs/s"
		}
		fmt.Fprintf(&b, "### %s\n\n", rowCellLabel(h))
		fmt.Fprintf(&b, "| lock | servers | %s | wait p99 | × best peer | × floor |\n|---|---|---:|---:|---:|---:|\n", unit)
		for _, r := range in {
			l := lockOf(r.Impl)
			p, hasPeer := best[groupOf(r)]
			switch {
			case l.Kind == string(registry.Ours):
			case l.Kind == string(registry.Peer) && hasPeer && p.Impl == r.Impl:
			case l.Kind == string(registry.Floor) && (r.Impl == "raw" || r.Impl == "raw-5"):
			default:
				continue
			}
			name := r.Impl
			if l.Kind != string(registry.Ours) {
				name = fmt.Sprintf("%s (%s)", r.Impl, l.Kind)
			}
			peer := "–"
			if l.Kind == string(registry.Ours) && hasPeer {
				peer = fmt.Sprintf("%.2f× %s", medianRoundRatio(r, p), p.Impl)
			}
			servers := fmt.Sprintf("%d %s", l.Nodes, l.System)
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", name, servers, fmtOps(r), fmtUs(r.WaitP99Us), peer, FmtRatio(r.OpsFloorRatio))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// headlineRows returns one row per scenario of rows, in their order, at
// the scenario's headline cell (as headlineCells picks cells).
func headlineRows(rows []speed.Row) []speed.Row {
	var out []speed.Row
	for _, r := range rows {
		i := slices.IndexFunc(out, func(h speed.Row) bool { return h.Scenario == r.Scenario })
		if i < 0 {
			out = append(out, r)
			continue
		}
		h := out[i]
		preferred := r.HoldUs > h.HoldUs
		if r.Keys > 1 {
			preferred = r.HoldUs < h.HoldUs
		}
		if r.Clients > h.Clients || r.Clients == h.Clients && preferred {
			out[i] = r
		}
	}
	return out
}

// rowCellLabel names a row's cell: "contended, 32 clients, hold 1ms".
func rowCellLabel(r speed.Row) string {
	parts := []string{r.Scenario}
	if r.Keys > 1 {
		parts = append(parts, fmt.Sprintf("%d clients over %d keys", r.Clients, r.Keys))
	} else if r.Clients > 1 {
		parts = append(parts, fmt.Sprintf("%d clients", r.Clients))
	}
	if r.Scenario != speed.ScUncontended {
		parts = append(parts, "hold "+fmtHoldUs(r.HoldUs))
	}
	return strings.Join(parts, ", ")
}

// medianRoundRatio is the median over the rounds both ran of a's ops/s
// over b's in the same round; without rounds in common, the ratio of the
// medians.
func medianRoundRatio(a, b speed.Row) float64 {
	var rs []float64
	for _, ra := range a.PerRound {
		for _, rb := range b.PerRound {
			if ra.Round == rb.Round && rb.OpsPerSec > 0 {
				rs = append(rs, ra.OpsPerSec/rb.OpsPerSec)
			}
		}
	}
	slices.Sort(rs)
	switch {
	case len(rs) == 0 && b.OpsPerSec > 0:
		return a.OpsPerSec / b.OpsPerSec
	case len(rs) == 0:
		return 0
	case len(rs)%2 == 1:
		return rs[len(rs)/2]
	default:
		return (rs[len(rs)/2-1] + rs[len(rs)/2]) / 2
	}
}

// The README's bench block lies between these markers; readmeBenchBlock
// makes it from the run in readmeSnapshot.
const (
	ReadmeBegin    = "<!-- bench:begin -->"
	ReadmeEnd      = "<!-- bench:end -->"
	ReadmeSnapshot = "testdata/readme" // summary.json, locks.json and machine.json of a real run
)

// ErrNoReadmeBlock is returned when a README has no bench block.
var ErrNoReadmeBlock = errors.New("README.md lacks a generated block's marker")

// ReadmeBenchBlock renders the README's bench block from the run in dir:
// the command and machine it ran with, then its verdicts and tables, one
// heading level down (the README's section is a "##").
func ReadmeBenchBlock(dir string) (string, error) {
	summary, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		return "", err
	}
	var locks []htmlreport.Lock
	b, err := os.ReadFile(filepath.Join(dir, "locks.json"))
	if err != nil {
		return "", err
	}
	if err := json.Unmarshal(b, &locks); err != nil {
		return "", fmt.Errorf("%s/locks.json: %w", dir, err)
	}
	var mach Machine
	if b, err = os.ReadFile(filepath.Join(dir, "machine.json")); err != nil {
		return "", err
	}
	if err := json.Unmarshal(b, &mach); err != nil {
		return "", fmt.Errorf("%s/machine.json: %w", dir, err)
	}
	sec, err := verdictSection(summary, locks)
	if err != nil {
		return "", err
	}
	sec = strings.ReplaceAll(sec, "\n### ", "\n#### ")
	sec = strings.Replace(sec, "## Verdicts\n", "### Verdicts\n", 1)
	var out strings.Builder
	out.WriteString("\n")
	fmt.Fprintf(&out, "From the run checked in as `bench/%s/summary.json` (`%s`, %s, %d × %s, GOMAXPROCS %d); "+
		"generated by `go test ./bench -run TestReadmeBenchBlock -update`, and that test fails when this block differs.\n\n",
		ReadmeSnapshot, mach.Command, mach.Start.UTC().Format("2006-01-02"), mach.CPUs, mach.CPUModel, mach.GOMAXPROCS)
	out.WriteString(strings.TrimRight(sec, "\n") + "\n\n")
	return out.String(), nil
}

// ReadmeBlock returns the text between the bench markers of readme.
func ReadmeBlock(readme string) (string, error) {
	return BlockBetween(readme, ReadmeBegin, ReadmeEnd)
}

// ReplaceReadmeBlock returns readme with its bench block replaced by block.
func ReplaceReadmeBlock(readme, block string) (string, error) {
	return ReplaceBetween(readme, ReadmeBegin, ReadmeEnd, block)
}

// BlockBetween returns the text between the markers begin and end of
// readme, or errNoReadmeBlock.
func BlockBetween(readme, begin, end string) (string, error) {
	_, rest, ok := strings.Cut(readme, begin)
	if !ok {
		return "", fmt.Errorf("%w (%s)", ErrNoReadmeBlock, begin)
	}
	block, _, ok := strings.Cut(rest, end)
	if !ok {
		return "", fmt.Errorf("%w (%s)", ErrNoReadmeBlock, end)
	}
	return block, nil
}

// ReplaceBetween returns readme with the text between begin and end
// replaced by block.
func ReplaceBetween(readme, begin, end, block string) (string, error) {
	before, rest, ok := strings.Cut(readme, begin)
	if !ok {
		return "", fmt.Errorf("%w (%s)", ErrNoReadmeBlock, begin)
	}
	_, after, ok := strings.Cut(rest, end)
	if !ok {
		return "", fmt.Errorf("%w (%s)", ErrNoReadmeBlock, end)
	}
	return before + begin + block + end + after, nil
}
