package faults

import (
	"os"
	"testing"

	"github.com/locklab/locklab/bench/env"
	"github.com/locklab/locklab/internal/leakcheck"
)

// TestMain serves a fault scoreboard client process when this test binary
// is re-executed as one (startChild runs os.Executable), as the bench's
// main does; otherwise it runs the tests and checks for leaked goroutines.
func TestMain(m *testing.M) {
	if spec := os.Getenv(env.FaultChildEnv); spec != "" {
		os.Exit(FaultChildMain(spec))
	}
	leakcheck.VerifyTestMain(m)
}
