package rig

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/locklab/locklab/internal/leakcheck"
)

// MainWith is a TestMain for packages whose tests and Examples share
// servers other than Redis (an etcd cluster, a ZooKeeper server, a
// PostgreSQL server):
//
//	var endpoints []string
//
//	func TestMain(m *testing.M) {
//		rig.MainWith(m, func() (func(), error) {
//			e, err := rig.NewEtcd(context.Background(), 3)
//			if err != nil {
//				return nil, err
//			}
//			endpoints = e.Endpoints()
//			return func() { _ = e.Close() }, nil
//		})
//	}
//
// start starts the servers and returns what stops them; an error from it
// (no etcd installed, say) is printed and the run exits 1: tests never pass
// for want of a server. After the tests it stops the servers and, when the
// tests passed, fails the run if goroutines leaked. It does not return.
func MainWith(m *testing.M, start func() (stop func(), err error)) {
	stop, err := start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	stop()
	if code == 0 {
		if err := goleak.Find(leakcheck.Options()...); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: goroutines left after the tests passed: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
