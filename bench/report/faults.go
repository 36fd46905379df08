package report

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/locklab/locklab/bench/faults"
	"github.com/locklab/locklab/bench/registry"
)

// FaultReport is everything faults.md and faults.json are made from.
type FaultReport struct {
	Mach  Machine
	Setup *faults.FaultSetup
	Cells []*faults.CellResult
	Took  time.Duration
}

func (fr *FaultReport) cell(impl, sch string) *faults.CellResult {
	for _, c := range fr.Cells {
		if c.Impl.Name == impl && c.Sch.ID == sch {
			return c
		}
	}
	return nil
}

// Write writes faults.json, faults.md, the timelines and the heatmap into
// dir, and returns the matrix for stdout.
func (fr *FaultReport) Write(dir string, plots bool) (string, error) {
	var rows []faults.FaultRow
	for _, c := range fr.Cells {
		rows = append(rows, c.Row())
		for kind, f := range c.First {
			p := filepath.Join(dir, c.TimelinePath(kind))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return "", err
			}
			if err := os.WriteFile(p, []byte(f.Timeline), 0o644); err != nil {
				return "", err
			}
		}
	}
	if err := WriteJSON(filepath.Join(dir, "faults.json"), rows); err != nil {
		return "", err
	}
	matrix := fr.matrix()
	var md bytes.Buffer
	fmt.Fprintf(&md, "# locklab fault scoreboard, %s\n\n", fr.Mach.Start.Format(time.RFC3339))
	fmt.Fprintf(&md, "Command: `%s`\n\n", fr.Mach.Command)
	fmt.Fprintf(&md, "Every lock under the same faults, %d seeded runs each (seed %d), judged on the effect on a protected resource; %s in all. "+
		"Machine: %d × %s, %s, redis-server %s.\n\n", fr.Setup.Runs, fr.Setup.Seed, fr.Took.Round(time.Second),
		fr.Mach.CPUs, fr.Mach.CPUModel, fr.Mach.GoVersion, fr.Mach.RedisVersion)
	if plots {
		md.WriteString("![heatmap](faults_heatmap.svg)\n\n")
	}
	md.WriteString("## Matrix\n\n")
	md.WriteString(matrix)
	md.WriteString(faultLegend)
	fr.claimsSection(&md)
	fr.controlSection(&md)
	fr.detailSection(&md)
	fr.scheduleSection(&md)
	fr.opsSection(&md)
	md.WriteString(faultMethod)
	if err := os.WriteFile(filepath.Join(dir, "faults.md"), md.Bytes(), 0o644); err != nil {
		return "", err
	}
	if plots {
		if err := fr.heatmap(dir); err != nil {
			return "", err
		}
	}
	return matrix, nil
}

// matrix renders locks down, faults across.
func (fr *FaultReport) matrix() string {
	var b bytes.Buffer
	b.WriteString("| lock |")
	for _, s := range fr.Setup.Schedules {
		t := fmt.Sprintf("%d. %s", s.N, s.Title)
		if s.Modeled {
			t += " (modeled)"
		}
		b.WriteString(" " + t + " |")
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(fr.Setup.Schedules)) + "\n")
	for _, im := range fr.Setup.Impls {
		fmt.Fprintf(&b, "| %s |", im.Name)
		for _, s := range fr.Setup.Schedules {
			c := fr.cell(im.Name, s.ID)
			t := c.Text()
			if kind := c.Linked(); kind != "" {
				t = fmt.Sprintf("[%s](%s)", t, c.TimelinePath(kind))
			}
			if cl := registry.ClaimOf(im.Name, s.ID); im.Kind == registry.Ours && c.Unsafe > 0 {
				switch cl.Verdict {
				case registry.ClaimSurvives:
					t += " **promised safe**"
				case registry.ClaimNamed:
					t += " (named)"
				default:
					t += " *(no claim)*"
				}
			}
			b.WriteString(" " + t + " |")
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	return b.String()
}

const faultLegend = `A cell is the number of runs, of those judged, in which the lock was
**unsafe** (two clients inside the critical section at once, for a lock
without fencing tokens; a lost update; or a stale write the fenced store
accepted) or **stuck** (someone waited longer than the schedule's bound while
nobody held the lock). Each unsafe or stuck cell links to the timeline of
its first such run; every cell's first run is in ` + "`timelines/`" + ` too. For our
locks, an unsafe cell says whether the lock **claims** to survive that fault
(its claims in the bench's lock registry), **names** it as a fault it does not
survive, or does not say *(no claim)*: see "Against the claims" below. A cell reading – is a fault
that does not apply to the lock's system (a Redis server's failover for a
lock on etcd; a pooler for a lock on Redis). After the safety figure a cell
may say "N of M releases reported failed that took effect": of the M
Unlocks in its runs, N returned an error although the lock was released
(read on the lock's servers right after: the holder's token was on none of
them). That is a defect for the caller (a retry loop, an alert, a second
release on an error path), not a safety violation, and it is counted apart
from unsafe and stuck; a release reported failed that did not take effect
leaves the key to its lease, which shows as stuck if someone waits past the
bound. Only the locks on Redis whose owner token the bench can read are
checked (not fencing's numbered token, nor the locks on other systems).

`

// claimsSection lists where our locks' measured cells and their claims
// disagree.
func (fr *FaultReport) claimsSection(b *bytes.Buffer) {
	b.WriteString("## Against the claims\n\n")
	var broken, unnamed []string
	for _, c := range fr.Cells {
		if c.NotRun != "" || c.Impl.Kind == registry.Naive {
			continue
		}
		cl := registry.ClaimOf(c.Impl.Name, c.Sch.ID)
		bad := c.Unsafe > 0 || (c.Stuck > 0 && c.Sch.Liveness)
		switch {
		case bad && cl.Verdict == registry.ClaimSurvives:
			broken = append(broken, fmt.Sprintf("- **%s** under %d. %s: %s; it claims to survive it (%s).", c.Impl.Name, c.Sch.N, c.Sch.Title, c.Text(), cl.Why))
		case c.Impl.Kind == registry.Ours && c.Unsafe > 0 && cl.Verdict == registry.ClaimUnstated:
			unnamed = append(unnamed, fmt.Sprintf("- %s under %d. %s: %s; it makes no claim about this fault.", c.Impl.Name, c.Sch.N, c.Sch.Title, c.Text()))
		}
		if line := releaseClaim(c, cl); line != "" {
			broken = append(broken, line)
		}
	}
	if len(broken) == 0 && len(unnamed) == 0 {
		b.WriteString("Every unsafe cell of our locks is a fault its claims name, every fault a lock claims to survive measured 0 unsafe runs, " +
			"and every lock's releases reported failed that took effect are where its claims say.\n\n")
		return
	}
	if len(broken) > 0 {
		b.WriteString("Claims broken (a bug in the lock, or in its claim):\n\n" + strings.Join(broken, "\n") + "\n\n")
	}
	if len(unnamed) > 0 {
		b.WriteString("Unsafe where the claims are silent (the lock's registry entry should name the fault):\n\n" + strings.Join(unnamed, "\n") + "\n\n")
	}
}

// releaseClaim sets a cell's releases reported failed that took effect
// against the lock's claim about the schedule (Claim.FalseFailures), for a
// lock that states one: a line when they disagree, else "".
func releaseClaim(c *faults.CellResult, cl registry.Claim) string {
	switch {
	case cl.Verdict == registry.ClaimUnstated || c.Runs == 0:
		return ""
	case !cl.FalseFailures && c.FailedTookEffect > 0:
		return fmt.Sprintf("- **%s** under %d. %s: %s; its claim says every release that takes effect says so (%s).", c.Impl.Name, c.Sch.N, c.Sch.Title, c.Text(), cl.Why)
	case cl.FalseFailures && c.FailedTookEffect == 0:
		return fmt.Sprintf("- **%s** under %d. %s: %s, no release reported failed that took effect in %d releases; its claim says its code reports some (%s): the claim is wrong, or the runs did not reach it.",
			c.Impl.Name, c.Sch.N, c.Sch.Title, c.Text(), c.Releases, cl.Why)
	}
	return ""
}

// controlSection says whether each naive lock was caught where its one
// mistake should show: a scoreboard that passes them there is blind.
func (fr *FaultReport) controlSection(b *bytes.Buffer) {
	var lines []string
	for _, c := range fr.Cells {
		cl := registry.ClaimOf(c.Impl.Name, c.Sch.ID)
		if cl.Verdict != registry.ClaimMistake || c.NotRun != "" {
			continue
		}
		verdict := "caught"
		if c.Unsafe == 0 && c.Stuck == 0 {
			verdict = "**NOT CAUGHT: the scoreboard is blind here**"
		}
		lines = append(lines, fmt.Sprintf("- %s under %d. %s: %s, %s (%s).", c.Impl.Name, c.Sch.N, c.Sch.Title, c.Text(), verdict, cl.Why))
	}
	if len(lines) == 0 {
		return
	}
	b.WriteString("## The control rows\n\n")
	b.WriteString("Each naive lock makes one mistake; where it should show, the scoreboard must see it:\n\n" + strings.Join(lines, "\n") + "\n\n")
}

// Blind lists the naive locks' cells where their mistake did not show.
func (fr *FaultReport) Blind() []string {
	var out []string
	for _, c := range fr.Cells {
		if registry.ClaimOf(c.Impl.Name, c.Sch.ID).Verdict == registry.ClaimMistake && c.NotRun == "" && c.Runs > 0 && c.Unsafe == 0 && c.Stuck == 0 {
			out = append(out, c.Impl.Name+" under "+c.Sch.ID)
		}
	}
	return out
}

// BrokenPromises lists our locks' cells that are unsafe (or stuck, for the
// holder killed) where they claim to survive.
func (fr *FaultReport) BrokenPromises() []string {
	var out []string
	for _, c := range fr.Cells {
		if c.Impl.Kind != registry.Ours || c.NotRun != "" {
			continue
		}
		if (c.Unsafe > 0 || (c.Stuck > 0 && c.Sch.Liveness)) && registry.ClaimOf(c.Impl.Name, c.Sch.ID).Verdict == registry.ClaimSurvives {
			out = append(out, fmt.Sprintf("%s under %s: %s", c.Impl.Name, c.Sch.ID, c.Text()))
		}
	}
	return out
}

// detailSection gives the figures behind every cell.
func (fr *FaultReport) detailSection(b *bytes.Buffer) {
	b.WriteString("## Figures\n\n")
	b.WriteString("Per lock and fault: runs judged (inconclusive), unsafe, stuck, runs with overlapping critical sections, lost updates, stale writes accepted by the fenced store, writes it refused, " +
		"runs in which the holder's lock said it was lost (and of the overlapping runs, how many before the overlap began; – for a lock with no loss signal), the longest stall, " +
		"and the releases: of the Unlocks, how many returned an error, and of those how many took effect all the same (the lock was released; a defect, not unsafe).\n\n")
	b.WriteString("| lock | fault | runs | unsafe | stuck | overlaps | lost updates | stale writes accepted | writes refused | told (before overlap) | longest stall | releases: failed (took effect) |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, im := range fr.Setup.Impls {
		for _, s := range fr.Setup.Schedules {
			c := fr.cell(im.Name, s.ID)
			if c.NotRun != "" {
				continue
			}
			runs := fmt.Sprint(c.Runs)
			if c.Inconclusive > 0 {
				runs += fmt.Sprintf(" (%d)", c.Inconclusive)
			}
			told := fmt.Sprint(c.Told)
			if im.LossSignal {
				told += fmt.Sprintf(" (%d)", c.ToldBefore)
			} else {
				told = "–"
			}
			refused := "–"
			if c.Refused > 0 || c.Fenced {
				refused = fmt.Sprint(c.Refused)
			}
			fmt.Fprintf(b, "| %s | %d. %s | %s | %d | %d | %d | %d | %d | %s | %s | %s | %d: %d (%d) |\n", im.Name, s.N, s.ID, runs,
				c.Unsafe, c.Stuck, c.Overlaps, c.Lost, c.Stale, refused, told, fmtUs(float64(c.MaxStall.Microseconds())),
				c.Releases, c.ReleasesFailed, c.FailedTookEffect)
		}
	}
	b.WriteString("\n")
	var notes, refusals []string
	for _, c := range fr.Cells {
		if c.Inconclusive > 0 {
			notes = append(notes, fmt.Sprintf("- %s under %s: %d inconclusive, first: %s", c.Impl.Name, c.Sch.ID, c.Inconclusive, c.WhyNot))
		}
		if c.Declined > 0 {
			refusals = append(refusals, fmt.Sprintf("- %s under %s: refused to run in %d runs (counted safe): %s", c.Impl.Name, c.Sch.ID, c.Declined, c.WhyDeclined))
		}
	}
	for _, l := range []struct {
		title string
		items []string
	}{
		{"Inconclusive runs (not counted either way):", notes},
		{"Locks that refused the servers they were given:", refusals},
	} {
		if len(l.items) > 0 {
			b.WriteString(l.title + "\n\n" + strings.Join(l.items, "\n") + "\n\n")
		}
	}
}

// opsSection lists the commands schedules 2 and 3 faulted in turn.
func (fr *FaultReport) opsSection(b *bytes.Buffer) {
	if len(fr.Setup.Ops) == 0 {
		return
	}
	b.WriteString("## The commands of schedules 2 and 3\n\n")
	b.WriteString("Found in fault-free runs (MONITOR on server 0, then per-client counts; for the locks on other systems, the chunks of bytes each client sends in its turn, counted through a proxy); run i faults pair i mod K, at its (i div K)+1-th occurrence from that client.\n\n")
	for _, im := range fr.Setup.Impls {
		var parts []string
		for _, o := range fr.Setup.Ops[im.Name] {
			parts = append(parts, o.Op.Short()+" ("+o.Client+")")
		}
		fmt.Fprintf(b, "- %s: %s\n", im.Name, strings.Join(parts, ", "))
	}
	b.WriteString("\n")
}

func (fr *FaultReport) scheduleSection(b *bytes.Buffer) {
	b.WriteString("## The schedules\n\n")
	for _, s := range fr.Setup.Schedules {
		label := "real"
		if s.Modeled {
			label = "modeled"
		}
		fmt.Fprintf(b, "%d. **%s** (%s; lease %v): %s", s.N, s.Title, label, s.TTL, s.What)
		if why := fr.Setup.Skip(s); why != "" {
			fmt.Fprintf(b, " *Not run here: %s.*", why)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

const faultMethod = `## Method

- **One run** is one lock under one schedule. A takes the lock, enters the
  critical section and reads the protected resource, a counter; the fault
  hits; B wants the lock, and C just after; each of them, once it holds the
  lock, reads the counter, writes it back plus one, holds the lock 150 ms
  more and releases it. A's work lasts until the fault is over: B has
  written, or a window passed with nobody getting in (1.5 s after B began to
  wait; 2.5 s for the paused holder, 4 s after a failover). Then A writes
  its counter back plus one, exits and unlocks. Every client is a careful
  user: before it writes it checks its lock's loss signal (watchdog's Done,
  Keep's lease, rueidislock's context, etcdlock's and zklock's Done) and
  its lease by its own clock
  (Until, where the lock has one), and abandons the work without writing
  when either says the lock is gone; a client told its lock is lost while
  it works stops at once.
- **One event** is one seeded instance of a schedule for every lock at
  once, each lock with its own key, resource and clients: the same fault at
  the same moment for all.
- **Clients as users run them**: go-redis and rueidis on their libraries'
  default options (go-redis retries a failed command up to 3 times), their
  timeouts scaled down with the short leases (300 ms; users run 3 s with
  leases of 10-30 s). The peers on their defaults except as the speed bench
  sets them (redislock retries every 1 ms; rueidislock with KeyMajority 1).
  Each client is its own connection pool; the holder that is paused or
  killed is a child process. The locks on other systems run on the
  bench's own servers (a 3-member etcd cluster, a 3-server ZooKeeper
  ensemble, one PostgreSQL server, fsync on), each client on its system's
  Go client with its defaults (clientv3, go-zookeeper, pgx in a pool of
  2): etcdlock with a lease of its own per hold (its default; etcd grants
  at least 2 s), zklock's session timeout the schedule's lease. Their
  lost replies and late requests are faulted by the chunk of bytes the
  client sends (one request, in practice), counted through a proxy, since
  their protocols are not RESP.
- **Schedules apply by system**: a Redis server's failover, restart
  without data, eviction or clock jump does not apply to a lock on etcd,
  ZooKeeper or PostgreSQL (–), and schedules 10-13 apply to those only.
- **The resource** is a counter on a server of its own, which no fault
  touches. Locks that give fencing tokens write through a fenced store, the
  rule of fencing.Store (a write is applied only with a token larger than
  any applied before) as a script on that server, so its writes cross the
  same network as everything else; the others write plainly. Under
  schedule 13 the resource is a ledger in PostgreSQL written through the
  row lock's own transaction, which commits with the release or not at
  all (the transaction is its fence): unsafe there is a lost entry.
- **Judged on the effect**: overlapping critical sections (from the
  clients' own records, on one clock shared by all processes), lost updates
  (writes accepted minus the counter's rise), stale writes the fenced store
  accepted, the longest stall (someone waiting while nobody held the lock),
  and whether the holder was told before another got in. For a lock with
  fencing tokens an overlap is harmless unless a write got through out of
  order, so it is unsafe only on a lost update or a stale write accepted.
- A run that cannot be judged (A did not get the lock at the start, a
  server did not come back) is inconclusive and counted neither way.
`
