// Package leakcheck wraps go.uber.org/goleak with the goroutines every
// locklab test may legitimately leave running:
//
//   - internal/proc's spawner, which lives as long as the process so that
//     child processes get their parent-death signal (by design);
//   - go-redis's pool dial probe (ConnPool.tryDial), started after a failed
//     dial; it notices a closed pool within one second and exits;
//   - internal/rig's process waiters, one per running server (reapRedis
//     for a redis-server, reap for an etcd member, a ZooKeeper server,
//     PostgreSQL or PgBouncer), each living as long as its server: a
//     server shared by a package's tests runs until TestMain ends, and one
//     a test restarted (a fault: SIGKILL, then start again) gets a new
//     waiter then, which outlives that test. A server that outlives its
//     test binary is caught by make test's stray check instead.
//
// Anything else still running after a test is a leak.
package leakcheck

import (
	"testing"

	"go.uber.org/goleak"
)

// Options returns the goleak options described in the package doc.
func Options() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreTopFunction("github.com/locklab/locklab/internal/proc.spawner"),
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"),
		goleak.IgnoreAnyFunction("github.com/locklab/locklab/internal/rig.reapRedis"),
		goleak.IgnoreAnyFunction("github.com/locklab/locklab/internal/rig.reap"),
	}
}

// VerifyTestMain runs the package's tests, then fails if goroutines leaked.
func VerifyTestMain(m *testing.M) { goleak.VerifyTestMain(m, Options()...) }

// VerifyNone fails t if goroutines other than the ignored ones are running.
// Call it at the end of a test, after the code under test has been shut
// down. extra adds options, such as goleak.IgnoreCurrent() evaluated at the
// start of the test (defer leakcheck.VerifyNone(t, goleak.IgnoreCurrent())).
func VerifyNone(t testing.TB, extra ...goleak.Option) {
	t.Helper()
	goleak.VerifyNone(t, append(Options(), extra...)...)
}

// Since takes a snapshot of the goroutines running now (a package's shared
// servers, other tests') and returns a check that fails t if a goroutine
// started after the snapshot is still running, other than the allowed
// ones. Call the check once the code under test has been shut down.
func Since(t testing.TB) func() {
	t.Helper()
	opts := append(Options(), goleak.IgnoreCurrent())
	return func() {
		t.Helper()
		goleak.VerifyNone(t, opts...)
	}
}

// Guard runs the check of [Since] at the end of the test. Call it first in
// the test, so that it runs after the test's other Cleanups.
func Guard(t testing.TB) {
	t.Helper()
	t.Cleanup(Since(t))
}
