package speed

import (
	"slices"

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

// WithClientKinds returns impls (resolved from -impls) as the -client
// kinds ask: each lock on its own clients when plain is asked for (or
// -client is not given), and its run on AutoPipeliners after it when
// autopipe is asked for, or, without -client, when the lock is marked
// PipelinedInDefault.
func WithClientKinds(impls []*registry.Lock, kinds []string) []*registry.Lock {
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
func autopipeCell(c Cell, head []Cell, kinds []string) bool {
	if kinds != nil {
		return slices.Contains(kinds, registry.AutoPipe)
	}
	return (c.Scenario == ScContended || c.Scenario == ScKeys) && slices.Contains(head, c)
}
