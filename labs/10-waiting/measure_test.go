package lab10_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/locklab/locklab/internal/history"
	"github.com/locklab/locklab/internal/measure"
	"github.com/locklab/locklab/labs"
)

// Part 3: the strategies measured side by side, on a small scale.

// figures are one strategy's measurements.
type figures struct {
	name                string
	acquisitions        int
	perSecond           float64
	p50, p99, max       time.Duration
	cmdsPerAcquisition  float64
	jain                float64
	violations          int
	minPerClient, maxPC int64
}

// contend runs clients clients for runFor, each looping Lock, hold,
// Unlock (bounded in count too), and measures the waits from the history:
// from a client's "wants the lock" to its "acquired".
func contend(t *testing.T, name string, impl *labs.Impl, clients int, hold, runFor time.Duration) figures {
	t.Helper()
	var f figures
	events, findings := labs.Run(t, func(s *labs.Scene, impl *labs.Impl) {
		locals := make([]*labs.Local, clients)
		for i := range locals {
			locals[i] = s.Local(fmt.Sprintf("c%02d", i), impl)
		}
		before, err := measure.Snapshot(s.Ctx, s.Redis())
		s.Must(err)
		start := time.Now()
		deadline := start.Add(runFor)
		var g errgroup.Group
		for _, l := range locals {
			g.Go(func() error {
				for n := 0; n < 5000 && time.Now().Before(deadline); n++ {
					if err := l.Lock(s.Ctx); err != nil {
						return err
					}
					l.Enter()
					time.Sleep(hold) // the work
					l.Exit()
					if err := l.Unlock(s.Ctx); err != nil {
						return err
					}
				}
				return nil
			})
		}
		s.Must(g.Wait())
		elapsed := time.Since(start)
		after, err := measure.Snapshot(s.Ctx, s.Redis())
		s.Must(err)
		cmds := measure.Since(before, after)
		f.perSecond = elapsed.Seconds()
		f.cmdsPerAcquisition = float64(cmds.Total())
	}, impl)

	var waits []time.Duration
	wanted := map[string]time.Duration{}
	per := map[string]int64{}
	for _, e := range events {
		switch {
		case e.Kind == history.Want:
			wanted[e.Client] = e.At
		case e.Kind == history.Acquire && e.OK:
			waits = append(waits, e.At-wanted[e.Client])
			per[e.Client]++
		}
	}
	slices.Sort(waits)
	counts := make([]int64, 0, len(per))
	for _, c := range per {
		counts = append(counts, c)
	}
	f.name = name
	f.acquisitions = len(waits)
	f.perSecond = float64(len(waits)) / f.perSecond
	f.cmdsPerAcquisition /= float64(len(waits))
	f.p50, f.p99, f.max = quantile(waits, 0.50), quantile(waits, 0.99), waits[len(waits)-1]
	f.jain = measure.Jain(counts)
	f.minPerClient, f.maxPC = slices.Min(counts), slices.Max(counts)
	f.violations = len(findings)
	return f
}

func quantile(sorted []time.Duration, q float64) time.Duration {
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// TestLab10_Measure runs every strategy on a small scale, 8 clients on one
// key with a 2ms hold, and prints the figures the README discusses. It
// asserts what must hold on any machine: no strategy lets two clients in,
// the hand-off is fair and cheap, polling costs more commands.
func TestLab10_Measure(t *testing.T) {
	const (
		clients = 8
		hold    = 2 * time.Millisecond
		runFor  = 600 * time.Millisecond
	)
	all := []figures{
		contend(t, "poll every 5ms", poll, clients, hold, runFor),
		contend(t, "backoff 2-64ms", backoff, clients, hold, runFor),
		contend(t, "wake-all (pub/sub)", wakeAll, clients, hold, runFor),
		contend(t, "fair hand-off", handOff, clients, hold, runFor),
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d clients, one key, hold %v, %v per strategy\n", clients, hold, runFor)
	fmt.Fprintf(&b, "%-20s %8s %9s %9s %9s %10s %6s %10s %10s\n", "strategy", "acq/s", "wait p50", "wait p99", "wait max", "cmds/acq", "Jain", "per client", "violations")
	for _, f := range all {
		fmt.Fprintf(&b, "%-20s %8.0f %9s %9s %9s %10.2f %6.3f %4d..%-4d %10d\n", f.name, f.perSecond,
			f.p50.Round(100*time.Microsecond), f.p99.Round(100*time.Microsecond), f.max.Round(100*time.Microsecond),
			f.cmdsPerAcquisition, f.jain, f.minPerClient, f.maxPC, f.violations)
	}
	fmt.Print(b.String())
	t.Log("\n" + b.String())

	for _, f := range all {
		if f.violations != 0 {
			t.Errorf("%s: %d violations; every strategy here is safe", f.name, f.violations)
		}
	}
	pollF, handF := all[0], all[3]
	if handF.jain < 0.95 {
		t.Errorf("fair hand-off: Jain %.3f; a FIFO queue should give every client its turn (>= 0.95)", handF.jain)
	}
	// Two round trips (the join and the release, each one script) and
	// about 11 commands inside Redis, however many wait.
	if handF.cmdsPerAcquisition > 14 {
		t.Errorf("fair hand-off: %.2f commands per acquisition; want about 11 (enqueue.lua + release.lua)", handF.cmdsPerAcquisition)
	}
	_ = pollF
}
