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
//		rig.MainWith(m,
//			func() (*rig.Etcd, error) { return rig.NewEtcd(context.Background(), 3) },
//			func(e *rig.Etcd) { endpoints = e.Endpoints() })
//	}
//
// start starts the servers; an error from it (no etcd installed, say) is
// printed and the run exits 1: tests never pass for want of a server.
// Otherwise it hands them to use, runs the tests, closes the servers and,
// when the tests passed, fails the run if goroutines leaked. It does not
// return.
func MainWith[S interface{ Close() error }](m *testing.M, start func() (S, error), use func(S)) {
	mainRun(m, func() (func(), error) {
		s, err := start()
		if err != nil {
			return nil, err
		}
		use(s)
		return func() { _ = s.Close() }, nil
	})
}

// mainRun is [Main] and [MainWith]: start starts the servers and returns
// what stops them; its error is printed and the run exits 1. After the
// tests it stops the servers and, when the tests passed, fails the run if
// goroutines leaked (see package leakcheck). It does not return.
func mainRun(m *testing.M, start func() (stop func(), err error)) {
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
