package main

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/locklab/locklab/bench/registry"
)

// The kinds of go-redis client (-client, issue 38). A lock on Redis runs
// on its own clients (plain: each contending client has its own pool, as
// a separate process would) and, as its row name@autopipe, on go-redis
// AutoPipeliners: the contending clients are then goroutines of one
// process sharing one AutoPipeliner per server (registry.AutoPipe), in the
// same cell and round as the rest, in the rotated order.
//
// Without -client the default plan (and -full) runs the locks marked
// PipelinedInDefault on AutoPipeliners in the headline cells of the
// contended and keys scenarios only (autopipeCell), and any other
// selection of cells (-scenarios, -clients, -hold, -quick ...) none;
// -client plain,autopipe runs every lock that has a run on AutoPipeliners
// in every cell, and -client autopipe those runs alone.

// withClientKinds returns impls (resolved from -impls) as the -client
// kinds ask: each lock on its own clients when plain is asked for (or
// -client is not given), and its run on AutoPipeliners after it when
// autopipe is asked for, or, without -client, when the lock is marked
// PipelinedInDefault.
func withClientKinds(impls []*registry.Lock, kinds []string) []*registry.Lock {
	var out []*registry.Lock
	for _, im := range impls {
		if im.Pipelined { // named in -impls: runs as asked
			out = append(out, im)
			continue
		}
		if kinds == nil || slices.Contains(kinds, registry.Plain) {
			out = append(out, im)
		}
		v := im.OnPipeliners()
		if v != nil && (slices.Contains(kinds, registry.AutoPipe) || kinds == nil && im.PipelinedInDefault) && !slices.Contains(impls, v) {
			out = append(out, v)
		}
	}
	return out
}

// autopipeCell reports whether the runs on AutoPipeliners run in c: in
// every cell when -client names autopipe, in none when it does not, and
// without -client in the headline cells (head, of the whole plan) of the
// contended and keys scenarios, the cells issue 38's comparison needs.
func autopipeCell(c cell, head []cell, kinds []string) bool {
	if kinds != nil {
		return slices.Contains(kinds, registry.AutoPipe)
	}
	return (c.scenario == scContended || c.scenario == scKeys) && slices.Contains(head, c)
}

// clientSection compares the runs of each lock on AutoPipeliners with its
// runs on its own clients: per cell where both ran, each figure on each,
// and the median over rounds of their same-round ratio; and names the
// locks that ran on their own clients only, and why. It is empty when no
// lock ran on AutoPipeliners.
func (res *results) clientSection() string {
	if !slices.ContainsFunc(res.impls, func(im *registry.Lock) bool { return im.Pipelined }) {
		return ""
	}
	var b bytes.Buffer
	b.WriteString("## AutoPipeliner / own clients\n\n")
	b.WriteString("A row named `lock@autopipe` is the lock on go-redis AutoPipeliners (`client.AutoPipeline()`, go-redis " +
		"batching the commands that goroutines issue at the same time into one pipeline): its contending clients are goroutines " +
		"of one process sharing one AutoPipeliner per server, each with its own lock on each key, in the same round as the rest, in the " +
		"rotated order. Its ratios to the floor are to the floor on AutoPipeliners too (`raw@autopipe`, `raw+receipt@autopipe`); " +
		"on its own clients each contending client has its own connection pool, as a separate process would. " +
		"**×** is the median over rounds of the same-round ratio AutoPipeliner / own clients: above 1 means a higher figure on the " +
		"AutoPipeliner (better for acq/s, worse for wait p99 and server CPU).\n\n")
	var alone []string
	for _, im := range res.impls {
		switch {
		case im.Pipelined || im.OnPipeliners() != nil:
		case im.NoPipeliner != "":
			alone = append(alone, fmt.Sprintf("`%s`: %s", im.Name, im.NoPipeliner))
		case systemOf(im) != sysRedis:
			alone = append(alone, fmt.Sprintf("`%s`: not on Redis", im.Name))
		}
	}
	if len(alone) > 0 {
		b.WriteString("On their own clients only: " + strings.Join(alone, "; ") + ".\n\n")
	}
	b.WriteString("| lock | cell |")
	for _, f := range serverFigures {
		fmt.Fprintf(&b, " %s own | AutoPipeliner | × |", f.name)
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---:|---:|---:|", len(serverFigures)) + "\n")
	for _, im := range res.impls {
		v := im.OnPipeliners()
		if im.Pipelined || v == nil {
			continue
		}
		for _, c := range res.cells {
			ro, ok1 := res.rowOf(im.Name, c)
			ra, ok2 := res.rowOf(v.Name, c)
			if !ok1 || !ok2 {
				continue
			}
			fmt.Fprintf(&b, "| %s | %s |", im.Name, summaryLabel(c))
			for _, f := range serverFigures {
				ratio := roundRatio(res.runsOf(v.Name, c), res.runsOf(im.Name, c), f.round)
				fmt.Fprintf(&b, " %s | %s | %s |", f.show(f.med(ro)), f.show(f.med(ra)), fmtRatio(ratio))
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("\n")
	return b.String()
}
