package faultproxy

import (
	"strings"
	"testing"
)

// checkParsed checks what parser made of in (n bytes, complete or not,
// err): it must not fail, and when *wantLen is 0 (incomplete) it must not
// find a complete message. It turns a *wantLen of -1 into all of in and
// reports whether the case has a complete message left to check.
func checkParsed(t *testing.T, parser, in string, wantLen *int, n int, ok bool, err error) bool {
	t.Helper()
	if err != nil {
		t.Fatalf("%s(%q) error %v", parser, in, err)
	}
	if *wantLen < 0 {
		*wantLen = len(in)
	}
	if *wantLen == 0 {
		if ok {
			t.Fatalf("%s(%q) = complete (%d bytes); want incomplete", parser, in, n)
		}
		return false
	}
	return true
}

func TestParseCommand(t *testing.T) {
	tests := []struct {
		name, in string
		wantName string
		wantKey  string
		wantLen  int // 0: incomplete; -1: all of in
	}{
		{"array", "*3\r\n$3\r\nset\r\n$1\r\nk\r\n$1\r\nv\r\n", "SET", "k", -1},
		{"inline", "PING\r\n", "PING", "", -1},
		{"evalsha", "*4\r\n$7\r\nEVALSHA\r\n$2\r\nab\r\n$1\r\n1\r\n$3\r\nkey\r\n", "EVALSHA", "key", -1},
		{"eval no keys", "*3\r\n$4\r\nEVAL\r\n$8\r\nreturn 1\r\n$1\r\n0\r\n", "EVAL", "", -1},
		{"partial header", "*3\r\n$3\r\nse", "", "", 0},
		{"partial bulk", "*1\r\n$4\r\nPIN", "", "", 0},
		{"empty", "", "", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd, n, ok, err := parseCommand([]byte(tt.in))
			if !checkParsed(t, "parseCommand", tt.in, &tt.wantLen, n, ok, err) {
				return
			}
			if !ok || n != tt.wantLen || cmd.name != tt.wantName || cmd.firstKey() != tt.wantKey {
				t.Errorf("parseCommand(%q) = %q key %q, %d bytes, ok %v; want %q key %q, %d bytes",
					tt.in, cmd.name, cmd.firstKey(), n, ok, tt.wantName, tt.wantKey, tt.wantLen)
			}
		})
	}
	// Two commands back to back: the first is found, the rest left.
	in := "*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPING\r\n"
	if _, n, ok, _ := parseCommand([]byte(in)); !ok || n != len(in)/2 {
		t.Errorf("parseCommand of two pipelined PINGs took %d bytes; want %d", n, len(in)/2)
	}
}

func TestParseCommandScriptHash(t *testing.T) {
	// SHA-1 of "return 1", as SCRIPT LOAD would report it.
	const sha = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"
	eval, _, _, _ := parseCommand([]byte("*3\r\n$4\r\nEVAL\r\n$8\r\nreturn 1\r\n$1\r\n0\r\n"))
	evalsha, _, _, _ := parseCommand([]byte("*3\r\n$7\r\nevalsha\r\n$40\r\n" + strings.ToUpper(sha) + "\r\n$1\r\n0\r\n"))
	if eval.script() != sha || evalsha.script() != sha {
		t.Errorf("script() = %q (EVAL), %q (EVALSHA); want %q for both", eval.script(), evalsha.script(), sha)
	}
}

func TestParseReply(t *testing.T) {
	tests := []struct {
		name, in string
		kind     replyKind
		wantLen  int // 0: incomplete; -1: all of in
	}{
		{"status", "+OK\r\n", answer, -1},
		{"error", "-NOSCRIPT No matching script\r\n", answer, -1},
		{"int", ":12\r\n", answer, -1},
		{"bulk", "$2\r\nhi\r\n", answer, -1},
		{"null bulk", "$-1\r\n", answer, -1},
		{"null", "_\r\n", answer, -1},
		{"array", "*2\r\n:1\r\n$1\r\nx\r\n", answer, -1},
		{"null array", "*-1\r\n", answer, -1},
		{"map", "%1\r\n+server\r\n+redis\r\n", answer, -1},
		{"push", ">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$1\r\nm\r\n", push, -1},
		{"attribute", "|1\r\n+ttl\r\n:3\r\n", attribute, -1},
		{"verbatim", "=8\r\ntxt:abcd\r\n", answer, -1},
		{"double", ",1.5\r\n", answer, -1},
		{"partial array", "*2\r\n:1\r\n", answer, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, kind, ok, err := parseReply([]byte(tt.in))
			if !checkParsed(t, "parseReply", tt.in, &tt.wantLen, n, ok, err) {
				return
			}
			if !ok || n != tt.wantLen || kind != tt.kind {
				t.Errorf("parseReply(%q) = %d bytes, kind %v, ok %v; want %d bytes, kind %v", tt.in, n, kind, ok, tt.wantLen, tt.kind)
			}
		})
	}
	if _, _, _, err := parseReply([]byte("?what\r\n")); err == nil {
		t.Error("parseReply of a non-RESP byte: no error; want one")
	}
}

// FuzzParse checks that no input makes the parsers panic or claim more
// bytes than they were given.
func FuzzParse(f *testing.F) {
	f.Add([]byte("*3\r\n$3\r\nset\r\n$1\r\nk\r\n$1\r\nv\r\n"))
	f.Add([]byte("%1\r\n+a\r\n*2\r\n:1\r\n$-1\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, n, ok, _ := parseCommand(b); ok && (n <= 0 || n > len(b)) {
			t.Fatalf("parseCommand took %d of %d bytes", n, len(b))
		}
		if n, _, ok, _ := parseReply(b); ok && (n <= 0 || n > len(b)) {
			t.Fatalf("parseReply took %d of %d bytes", n, len(b))
		}
	})
}
