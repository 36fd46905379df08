package faults

import (
	"testing"
)

// TestCellText checks the matrix's wording.
func TestCellText(t *testing.T) {
	for _, tt := range []struct {
		c    CellResult
		want string
	}{
		{CellResult{Runs: 20}, "0/20"},
		{CellResult{Runs: 20, Unsafe: 7}, "7/20 runs unsafe"},
		{CellResult{Runs: 20, Stuck: 3}, "3/20 runs stuck"},
		{CellResult{Runs: 18, Unsafe: 2, Stuck: 1, Inconclusive: 2}, "2/18 runs unsafe, 1 stuck (+2 inconclusive)"},
		{CellResult{NotRun: "why"}, "not run"},
		{CellResult{Runs: 20, Releases: 310, ReleasesFailed: 45, FailedTookEffect: 42}, "0/20; 42 of 310 releases reported failed that took effect"},
		{CellResult{Runs: 20, Releases: 310, ReleasesFailed: 3}, "0/20"},
	} {
		if got := tt.c.Text(); got != tt.want {
			t.Errorf("text(%+v) = %q; want %q", tt.c, got, tt.want)
		}
	}
}

func TestParseMonitorLine(t *testing.T) {
	for _, tt := range []struct {
		line string
		want LockOp
		ok   bool
	}{
		{`+1700000000.123456 [0 127.0.0.1:51234] "set" "k" "tok" "NX" "PX" "1000"` + "\r\n", LockOp{Name: "SET"}, true},
		{`+1700000000.123456 [0 127.0.0.1:51234] "evalsha" "3F2A0000000000000000000000000000000000AB" "2" "k" "q"`, LockOp{Name: "EVALSHA", Sha: "3f2a0000000000000000000000000000000000ab"}, true},
		{`+1700000000.123456 [0 127.0.0.1:51234] "eval" "return \"x\"" "0"`, LockOp{Name: "EVALSHA", Sha: "3240a8ed5091523eff28d83e75106d8927b621f4"}, true},
		{`+1700000000.123456 [0 lua] "get" "k"`, LockOp{}, false},
		{`+1700000000.123456 [0 127.0.0.1:51234] "ping"`, LockOp{}, false},
		{`+1700000000.123456 [0 127.0.0.1:51234] "subscribe" "ch"`, LockOp{}, false},
		{`+1700000000.123456 [0 127.0.0.1:51234] "info" "commandstats"`, LockOp{}, false},
		{`garbage`, LockOp{}, false},
	} {
		got, ok := ParseMonitorLine(tt.line)
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseMonitorLine(%q) = %+v, %v; want %+v, %v", tt.line, got, ok, tt.want, tt.ok)
		}
	}
}
