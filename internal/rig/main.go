package rig

import (
	"context"
	"testing"
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
	mainRun(m, func() (func(), error) {
		nodes, err := NewN(context.Background(), n)
		if err != nil {
			return nil, err
		}
		use(nodes)
		return func() {
			for _, nd := range nodes {
				_ = nd.Close()
			}
		}, nil
	})
}
