package rig

import (
	"context"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/locklab/locklab/internal/leakcheck"
)

// Main is a TestMain for packages whose tests and Examples share n servers:
//
//	var redisAddr string
//
//	func TestMain(m *testing.M) {
//		rig.Main(m, 1, func(nodes []*rig.Node) { redisAddr = nodes[0].Addr() })
//	}
//
// It starts the nodes (or exits 1 with [InstallHint]), hands them to use,
// runs the tests, closes the nodes and, when the tests passed, fails the
// run if goroutines leaked (see package leakcheck). It does not return.
func Main(m *testing.M, n int, use func(nodes []*Node)) {
	nodes, err := NewN(context.Background(), n)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	use(nodes)
	code := m.Run()
	for _, nd := range nodes {
		_ = nd.Close()
	}
	if code == 0 {
		if err := goleak.Find(leakcheck.Options()...); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: goroutines left after the tests passed: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
