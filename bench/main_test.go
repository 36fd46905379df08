package main

import (
	"testing"

	"github.com/locklab/locklab/internal/rig"
)

// addrs are the shared servers of the package's tests and benchmarks: five,
// so 5-node locks can run too.
var addrs []string

func TestMain(m *testing.M) {
	rig.Main(m, 5, func(nodes []*rig.Node) {
		for _, n := range nodes {
			addrs = append(addrs, n.Addr())
		}
	})
}
