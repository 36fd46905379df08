package main

import "testing"

// TestCellText checks the matrix's wording.
func TestCellText(t *testing.T) {
	for _, tt := range []struct {
		c    cellResult
		want string
	}{
		{cellResult{runs: 20}, "0/20"},
		{cellResult{runs: 20, unsafe: 7}, "7/20 runs unsafe"},
		{cellResult{runs: 20, stuck: 3}, "3/20 runs stuck"},
		{cellResult{runs: 18, unsafe: 2, stuck: 1, inconclusive: 2}, "2/18 runs unsafe, 1 stuck (+2 inconclusive)"},
		{cellResult{notRun: "why"}, "not run"},
	} {
		if got := tt.c.text(); got != tt.want {
			t.Errorf("text(%+v) = %q; want %q", tt.c, got, tt.want)
		}
	}
}

func TestParseMonitorLine(t *testing.T) {
	for _, tt := range []struct {
		line string
		want lockOp
		ok   bool
	}{
		{`+1700000000.123456 [0 127.0.0.1:51234] "set" "k" "tok" "NX" "PX" "1000"` + "\r\n", lockOp{name: "SET"}, true},
		{`+1700000000.123456 [0 127.0.0.1:51234] "evalsha" "3F2A0000000000000000000000000000000000AB" "2" "k" "q"`, lockOp{name: "EVALSHA", sha: "3f2a0000000000000000000000000000000000ab"}, true},
		{`+1700000000.123456 [0 127.0.0.1:51234] "eval" "return \"x\"" "0"`, lockOp{name: "EVALSHA", sha: "3240a8ed5091523eff28d83e75106d8927b621f4"}, true},
		{`+1700000000.123456 [0 lua] "get" "k"`, lockOp{}, false},
		{`+1700000000.123456 [0 127.0.0.1:51234] "ping"`, lockOp{}, false},
		{`+1700000000.123456 [0 127.0.0.1:51234] "subscribe" "ch"`, lockOp{}, false},
		{`+1700000000.123456 [0 127.0.0.1:51234] "info" "commandstats"`, lockOp{}, false},
		{`garbage`, lockOp{}, false},
	} {
		got, ok := parseMonitorLine(tt.line)
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseMonitorLine(%q) = %+v, %v; want %+v, %v", tt.line, got, ok, tt.want, tt.ok)
		}
	}
}
