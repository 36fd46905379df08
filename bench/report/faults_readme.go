package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/locklab/locklab/bench/faults"
	"github.com/locklab/locklab/bench/registry"
)

// The README's fault tables lie between these markers; readmeFaultBlock
// makes them from the fault scoreboard's run in readmeFaultSnapshot, so
// the README's matrix cannot drift from a measurement
// (TestReadmeFaultBlock; -update rewrites it).
const (
	ReadmeFaultBegin    = "<!-- faults:begin -->"
	ReadmeFaultEnd      = "<!-- faults:end -->"
	ReadmeFaultSnapshot = "testdata/readme/faults.json" // faults.json of a real make faults run
	// ReadmeFaultMerges lists the schedules whose rows in the snapshot come
	// from a run of their own, merged in by MergeFaultRun: which, by what
	// command, when, with how many runs a cell.
	ReadmeFaultMerges = "testdata/readme/faults_merged.json"
)

// FaultMerge records one schedule's rows merged into the snapshot from a
// run of that schedule alone.
type FaultMerge struct {
	Fault       string `json:"fault"`
	FaultNumber int    `json:"fault_number"`
	Title       string `json:"title"`
	Command     string `json:"command"` // the run's command (its machine.json)
	Date        string `json:"date"`    // when the run started, UTC, RFC 3339
	Runs        int    `json:"runs"`    // the most runs a cell of it had (judged and inconclusive)
}

// MergeFaultRun merges the fault scoreboard's run in dir (its faults.json
// and machine.json) into the snapshot faults.json at snapshot, for the
// schedules that run measured: their rows in the snapshot are replaced by
// the run's, every other schedule's kept as they are, and each merged
// schedule is recorded in merges (replacing an earlier record of it), so
// that the README says which column came from which run. It is how one
// schedule's column is measured again without the whole make faults:
// go run ./bench -scenarios faults -faults ID, then go test ./bench -run
// TestReadmeFaultBlock -merge-faults DIR -update.
func MergeFaultRun(snapshot, merges, dir string) ([]FaultMerge, error) {
	// The rows are kept as they are written (raw), so that a row of an
	// older run keeps the fields it has and gains none it never measured.
	var runRaw, oldRaw []json.RawMessage
	var run, old []faults.FaultRow
	for _, f := range []struct {
		path string
		raw  *[]json.RawMessage
		rows *[]faults.FaultRow
	}{{filepath.Join(dir, "faults.json"), &runRaw, &run}, {snapshot, &oldRaw, &old}} {
		if err := readJSON(f.path, f.raw); err != nil {
			return nil, err
		}
		if err := readJSON(f.path, f.rows); err != nil {
			return nil, err
		}
	}
	var mach Machine
	if err := readJSON(filepath.Join(dir, "machine.json"), &mach); err != nil {
		return nil, err
	}
	if mach.Command == "" || mach.Start.IsZero() {
		return nil, fmt.Errorf("%s: no command or start time: not a bench run's machine.json", filepath.Join(dir, "machine.json"))
	}
	var recs []FaultMerge
	if _, err := os.Stat(merges); err == nil {
		if err := readJSON(merges, &recs); err != nil {
			return nil, err
		}
	}
	measured := map[string]*FaultMerge{}
	var order []string
	for _, r := range run {
		m := measured[r.Fault]
		if m == nil {
			m = &FaultMerge{Fault: r.Fault, FaultNumber: r.FaultNumber, Title: r.Title, Command: mach.Command,
				Date: mach.Start.UTC().Format(time.RFC3339)}
			measured[r.Fault] = m
			order = append(order, r.Fault)
		}
		m.Runs = max(m.Runs, r.Runs+r.Inconclusive)
	}
	for _, id := range order {
		if measured[id].Runs == 0 {
			return nil, fmt.Errorf("%s: schedule %s ran no lock: nothing to merge", dir, id)
		}
	}
	if len(order) == 0 {
		return nil, fmt.Errorf("%s/faults.json: no rows", dir)
	}
	var rows []json.RawMessage
	for i, r := range old {
		if measured[r.Fault] == nil {
			rows = append(rows, oldRaw[i])
		}
	}
	rows = append(rows, runRaw...)
	if err := WriteJSON(snapshot, rows); err != nil {
		return nil, err
	}
	recs = slices.DeleteFunc(recs, func(m FaultMerge) bool { return measured[m.Fault] != nil })
	for _, id := range order {
		recs = append(recs, *measured[id])
	}
	slices.SortFunc(recs, func(a, b FaultMerge) int { return a.FaultNumber - b.FaultNumber })
	if err := WriteJSON(merges, recs); err != nil {
		return nil, err
	}
	return recs, nil
}

// readJSON reads the JSON file at path into v.
func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// ReadmeFaultBlock renders the README's fault tables from the faults.json
// at path: one table for the locks on Redis, one for the locks on etcd,
// ZooKeeper and PostgreSQL, each with the schedules that apply to any of
// its locks, in the scoreboard's order. The schedules merged in from runs
// of their own are listed in merges (MergeFaultRun; a missing file: none).
func ReadmeFaultBlock(path, merges string) (string, error) {
	var rows []faults.FaultRow
	if err := readJSON(path, &rows); err != nil {
		return "", err
	}
	var recs []FaultMerge
	if _, err := os.Stat(merges); err == nil {
		if err := readJSON(merges, &recs); err != nil {
			return "", err
		}
	}
	apart := map[string]bool{}
	for _, m := range recs {
		apart[m.Fault] = true
	}
	var out strings.Builder
	runs := 0
	for _, r := range rows {
		if !apart[r.Fault] {
			runs = max(runs, r.Runs+r.Inconclusive)
		}
	}
	fmt.Fprintf(&out, "\nFrom the run checked in as `bench/%s` (`make faults`, %d seeded runs a cell, fewer where a schedule says so); "+
		"generated by `go test ./bench -run TestReadmeFaultBlock -update`, and that test fails when this block differs. "+
		"A cell is the runs in which the lock was unsafe, of those judged; \"stuck\": someone waited past the schedule's bound while nobody held the lock; "+
		"\"refused\": the lock refused the server (one that evicts keys, a pooler in statement pooling), counted safe; – the schedule does not apply. "+
		"\"N of M releases reported failed that took effect\": of the M Unlocks in the cell's runs, N returned an error although the lock was released "+
		"(the holder's token was on none of the lock's servers right after): a defect for the caller, who retries, alerts or releases again, not a safety violation.",
		ReadmeFaultSnapshot, runs)
	for _, m := range recs {
		fmt.Fprintf(&out, " Column %d (%s) is from a run of that schedule alone, `%s`, on %s, %d seeded runs a cell, merged into the snapshot by "+
			"`go test ./bench -run TestReadmeFaultBlock -merge-faults DIR -update` (`bench/%s` records it).",
			m.FaultNumber, m.Title, m.Command, m.Date, m.Runs, ReadmeFaultMerges)
	}
	out.WriteString("\n\n")
	redis := func(impl string) bool {
		im, ok := registry.Locks[impl]
		return !ok || registry.SystemOf(im) == registry.SysRedis
	}
	out.WriteString(faultTable(rows, redis))
	out.WriteString("\nThe locks on etcd, ZooKeeper and PostgreSQL in the same run:\n\n")
	out.WriteString(faultTable(rows, func(impl string) bool { return !redis(impl) }))
	out.WriteString("\n")
	return out.String(), nil
}

// faultTable is the markdown matrix of the rows whose lock in returns
// true: locks down, in the run's order, schedules across.
func faultTable(rows []faults.FaultRow, in func(impl string) bool) string {
	type col struct {
		n     int
		id    string
		title string
	}
	var impls []string
	var cols []col
	cell := map[[2]string]faults.FaultRow{}
	for _, r := range rows {
		if !in(r.Impl) {
			continue
		}
		if !slices.Contains(impls, r.Impl) {
			impls = append(impls, r.Impl)
		}
		cell[[2]string{r.Impl, r.Fault}] = r
		if r.NotRun == faults.NotApplicable || slices.ContainsFunc(cols, func(c col) bool { return c.id == r.Fault }) {
			continue
		}
		title := r.Title
		if r.Modeled {
			title += " (modeled)"
		}
		cols = append(cols, col{r.FaultNumber, r.Fault, title})
	}
	slices.SortFunc(cols, func(a, b col) int { return a.n - b.n })
	var b strings.Builder
	b.WriteString("| lock |")
	for _, c := range cols {
		fmt.Fprintf(&b, " %d %s |", c.n, c.title)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(cols)) + "\n")
	for _, im := range impls {
		b.WriteString("| " + im + " |")
		for _, c := range cols {
			r, ok := cell[[2]string{im, c.id}]
			t := "not run"
			if ok {
				t = readmeCell(r)
			}
			b.WriteString(" " + t + " |")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// readmeCell is a fault cell in the README's words: "0/20", "20/20"
// (unsafe), "3/20 stuck", "refused", "–".
func readmeCell(r faults.FaultRow) string {
	switch {
	case r.NotRun == faults.NotApplicable:
		return "–"
	case r.NotRun != "":
		return "not run"
	case r.Runs == 0:
		return fmt.Sprintf("inconclusive (%d)", r.Inconclusive)
	case r.RefusedToRun == r.Runs && r.UnsafeRuns == 0 && r.StuckRuns == 0:
		return "refused"
	}
	s := fmt.Sprintf("%d/%d", r.UnsafeRuns, r.Runs)
	switch {
	case r.UnsafeRuns > 0 && r.StuckRuns > 0:
		s += fmt.Sprintf(", %d stuck", r.StuckRuns)
	case r.StuckRuns > 0:
		s = fmt.Sprintf("%d/%d stuck", r.StuckRuns, r.Runs)
	}
	if r.RefusedToRun > 0 {
		s += fmt.Sprintf(" (%d refused)", r.RefusedToRun)
	}
	if r.Inconclusive > 0 {
		s += fmt.Sprintf(" (+%d inconclusive)", r.Inconclusive)
	}
	if r.ReleasesFailedTookEffect > 0 {
		s += fmt.Sprintf("; %d of %d releases reported failed that took effect", r.ReleasesFailedTookEffect, r.Releases)
	}
	return s
}
