package report

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/locklab/locklab/bench/registry"
	"github.com/locklab/locklab/bench/speed"
)

// ClientSection compares the runs of each lock on AutoPipeliners
// (-client, speed.WithClientKinds) with its runs on its own clients: per
// cell where both ran, each figure on each, and the median over rounds of
// their same-round ratio; and names the locks that ran on their own
// clients only, and why. It is empty when no lock ran on AutoPipeliners.
func (res *Results) ClientSection() string {
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
		case registry.SystemOf(im) != registry.SysRedis:
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
		for _, c := range res.Cells {
			ro, ok1 := res.RowOf(im.Name, c)
			ra, ok2 := res.RowOf(v.Name, c)
			if !ok1 || !ok2 {
				continue
			}
			fmt.Fprintf(&b, "| %s | %s |", im.Name, SummaryLabel(c))
			for _, f := range serverFigures {
				ratio := speed.RoundRatio(res.runsOf(v.Name, c), res.runsOf(im.Name, c), f.round)
				fmt.Fprintf(&b, " %s | %s | %s |", f.show(f.med(ro)), f.show(f.med(ra)), FmtRatio(ratio))
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("\n")
	return b.String()
}
