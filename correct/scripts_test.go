package correct_test

import (
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/correct"
)

// TestScriptsLoad loads every embedded script into a real server: each must
// compile, and the server must name it by the SHA-1 that EVALSHA will send.
// The scripts that hand the lock over, or claim it, run with handoff.lua in
// front.
func TestScriptsLoad(t *testing.T) {
	c := newClient(t)
	ctx := testContext(t)
	for name, s := range correct.Scripts {
		t.Run(name, func(t *testing.T) {
			src := s.Src
			if strings.Contains(src, "handoff(") || strings.Contains(src, "claim(") {
				src = correct.HandoffLua + src
			}
			sha, err := c.ScriptLoad(ctx, src).Result()
			if err != nil {
				t.Fatalf("SCRIPT LOAD %s: %v", name, err)
			}
			if got, want := s.Script.Hash(), sha; got != want {
				t.Errorf("Hash() = %s; want %s (the server's SHA)", got, want)
			}
		})
	}
}

// TestScriptsHaveContractHeader checks that every script starts with a
// comment naming its KEYS, ARGV and return values, and what running it
// twice does (a reply can be lost and the client send it again).
func TestScriptsHaveContractHeader(t *testing.T) {
	for name, s := range correct.Scripts {
		var header []string
		for _, line := range strings.Split(s.Src, "\n") {
			if !strings.HasPrefix(line, "--") {
				break
			}
			header = append(header, line)
		}
		h := strings.Join(header, "\n")
		if !strings.HasPrefix(h, "-- "+name+": ") {
			t.Errorf("%s: header does not start with %q", name, "-- "+name+": ")
		}
		for _, want := range []string{"KEYS[1]", "ARGV[1]", "Returns", "twice"} {
			if !strings.Contains(h, want) {
				t.Errorf("%s: header does not mention %s:\n%s", name, want, h)
			}
		}
	}
}

// TestScriptsSurviveFlush runs every script after SCRIPT FLUSH, as after a
// restart or failover: EVALSHA gets NOSCRIPT and Script.Run falls back to
// EVAL.
func TestScriptsSurviveFlush(t *testing.T) {
	c := newClient(t)
	ctx := testContext(t)
	m := correct.New(c, newKey(t))
	if err := m.Lock(ctx); err != nil {
		t.Fatalf("Lock = %v; want nil", err)
	}
	steps := []struct {
		name string
		run  func() error
	}{
		{"ttl.lua", func() error { _, err := m.TTL(ctx); return err }},
		{"extend.lua", func() error { return m.Extend(ctx, 8*time.Second) }},
		{"release.lua", func() error { return m.Unlock(ctx) }},
	}
	for _, s := range steps {
		if err := c.ScriptFlush(ctx).Err(); err != nil {
			t.Fatalf("SCRIPT FLUSH: %v", err)
		}
		if err := s.run(); err != nil {
			t.Errorf("%s after SCRIPT FLUSH: %v; want nil", s.name, err)
		}
	}
}
