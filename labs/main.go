package labs

import (
	"fmt"
	"os"
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
func Main(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(childMain(spec))
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
