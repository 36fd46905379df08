package labs

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"testing"

	"go.uber.org/goleak"

	"github.com/locklab/locklab/internal/leakcheck"
)

// Main is every lab package's TestMain:
//
//	func TestMain(m *testing.M) { labs.Main(m) }
//
// In a child process started by [Scene.Process] it serves that client and
// exits. Otherwise it runs the tests and, when they passed, fails the run
// if goroutines leaked.
//
// Options: [WaitingLab].
func Main(m *testing.M, opts ...MainOption) {
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(childMain(spec))
	}
	for _, o := range opts {
		o()
	}
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(leakcheck.Options()...); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: goroutines left after the tests passed: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// A MainOption changes how [Main] runs a lab's tests.
type MainOption func()

// WaitingLab says that the lab's scenarios spend their time waiting (for a
// lease or a session to expire, an election, a keep-alive to give up), not
// on the CPU: up to n of its parallel tests run at once, not GOMAXPROCS
// (go test's default, 2 on a 2-core machine). A -parallel flag on the
// command line wins. Lab 13 runs in about half the time with it.
func WaitingLab(n int) MainOption {
	return func() {
		flag.Parse()
		set := false
		flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
		if !set && n > 0 {
			_ = flag.Set("test.parallel", strconv.Itoa(n))
		}
	}
}
