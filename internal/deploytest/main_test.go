package deploytest_test

import (
	"testing"

	"github.com/locklab/locklab/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }
