package report

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/locklab/locklab/bench/env"
	"github.com/locklab/locklab/bench/registry"
	"github.com/locklab/locklab/bench/speed"
)

// The chapter's throughput claims, tested on this machine: "分布式锁完全指南：
// 从 SETNX 到 Redisson" (section 35.5.2) puts Redis locks at "100k+ QPS"
// and ZooKeeper locks at "tens of thousands", and recommends etcd as the
// middle ground and the database's row lock for the most critical work.
// The table sets each claim beside what this run measured for the lock
// that stands for it, and beside Redis's own ceiling, measured in the same
// run by redis-benchmark at the same concurrency (bench/speed/redisbench.go: a bare
// SET; a lock pair needs at least two commands, so at most half of it).

// chapterSection returns the claims table for report.md, or "" when none
// of the locks on other systems ran.
func (res *Results) chapterSection() string {
	ran, onOthers := map[string]bool{}, false
	for _, r := range res.Rows {
		ran[r.Impl] = true
		if im, ok := registry.Locks[r.Impl]; ok && registry.SystemOf(im) != registry.SysRedis {
			onOthers = true
		}
	}
	if !onOthers {
		return ""
	}
	var b bytes.Buffer
	b.WriteString("## The chapter's throughput claims, measured here\n\n")
	b.WriteString("\"分布式锁完全指南：从 SETNX 到 Redisson\" (section 35.5.2) rates Redis locks at \"100k+ QPS\" and ZooKeeper locks at \"tens of thousands\". ")
	b.WriteString("Each row is the lock that stands for the claim, in this run: acquire+release pairs per second from one client on fresh keys (uncontended), and acquisitions per second from the most clients of the keys scenario with no hold (many keys, little contention: a lock service's best case). ")
	b.WriteString("Redis's own ceiling is redis-benchmark's SET against the same server, in this run, at the same concurrency (see Machine and versions); a lock pair needs at least two commands, so at most half of it.\n\n")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if v := env.Others.Versions(ctx); len(v) > 0 {
		fmt.Fprintf(&b, "Servers: %s; Redis as above, no persistence.\n\n", strings.Join(v, "; "))
	}

	keysN := 0
	for _, r := range res.Rows {
		if r.Scenario == speed.ScKeys && r.HoldUs == 0 {
			keysN = max(keysN, r.Clients)
		}
	}
	keysHead, rbClients := fmt.Sprintf("keys, %d clients, acq/s", keysN), fmt.Sprintf("1 and %d clients", keysN)
	if keysN == 0 {
		keysHead, rbClients = "keys, acq/s (not in this run)", "1 client"
	}
	fmt.Fprintf(&b, "| system | the chapter says | lock | uncontended pairs/s | %s | claim met? |\n", keysHead)
	b.WriteString("|---|---|---|---:|---:|---|\n")
	one, ok1 := res.mach.RedisBenchmark.Rate(1)
	many, okN := res.mach.RedisBenchmark.Rate(keysN)
	if !ok1 && !okN {
		why := "not in this run"
		if rb := res.mach.RedisBenchmark; rb != nil && rb.Error != "" {
			why = rb.Error
		}
		fmt.Fprintf(&b, "| Redis server, one command | high: 100k+ QPS | redis-benchmark | not measured: %s | | |\n", why)
	} else {
		best := max(one.PerSec, many.PerSec)
		verdict := fmt.Sprintf("yes: %.0f/s", best)
		if best < 100_000 {
			verdict = fmt.Sprintf("no, not on this machine: best %.0f/s, %.2g× the claim", best, best/100_000)
		}
		fmt.Fprintf(&b, "| Redis server, one command | high: 100k+ QPS | redis-benchmark SET (%s) | %s | %s | %s |\n",
			rbClients, fmtRateOK(one.PerSec, ok1), fmtRateOK(many.PerSec, okN), verdict)
	}
	for _, c := range registry.ChapterClaims {
		if !ran[c.Impl] {
			continue
		}
		unc, okU := res.chapterRate(c.Impl, speed.ScUncontended, 1)
		keys, okK := res.chapterRate(c.Impl, speed.ScKeys, keysN)
		verdict := "–"
		if c.Want > 0 && (okU || okK) {
			best := max(unc, keys)
			if best >= c.Want {
				verdict = fmt.Sprintf("yes: %.0f/s", best)
			} else {
				verdict = fmt.Sprintf("no, not on this machine: best %.0f/s, %.2g× the claim", best, best/c.Want)
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", c.System, c.Claim, c.Impl, fmtRateOK(unc, okU), fmtRateOK(keys, okK), verdict)
	}
	b.WriteString("\nFigures from a shared or loaded machine say little; compare the rows with each other, in one run.\n\n")
	return b.String()
}

// chapterRate returns the median ops/s of impl in scenario at n clients,
// hold 0.
func (res *Results) chapterRate(impl, scenario string, n int) (float64, bool) {
	for _, r := range res.Rows {
		if r.Impl == impl && r.Scenario == scenario && r.HoldUs == 0 && (scenario == speed.ScUncontended || r.Clients == n) {
			return r.OpsPerSec, true
		}
	}
	return 0, false
}

func fmtRateOK(v float64, ok bool) string {
	if !ok {
		return "–"
	}
	return fmt.Sprintf("%.0f", v)
}
