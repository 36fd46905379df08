package token_test

import (
	"encoding/base64"
	"strings"
	"sync"
	"testing"

	"github.com/locklab/locklab/internal/token"
)

func TestNewIs128BitsAndUnique(t *testing.T) {
	seen := map[string]bool{}
	for range 10000 {
		tok := token.New()
		b, err := base64.RawURLEncoding.DecodeString(tok)
		if err != nil || len(b) != token.Size {
			t.Fatalf("New() = %q decodes to %d bytes, %v; want %d bytes", tok, len(b), err, token.Size)
		}
		if seen[tok] {
			t.Fatalf("New() repeated %q", tok)
		}
		seen[tok] = true
	}
}

func TestSlotTakesOnce(t *testing.T) {
	var s token.Slot
	if got := s.Get(); got != "" {
		t.Fatalf("zero Slot: Get() = %q; want \"\"", got)
	}
	s.Set("a")
	if got := s.Get(); got != "a" {
		t.Fatalf("after Set(%q): Get() = %q", "a", got)
	}
	if got := s.Take(); got != "a" {
		t.Fatalf("Take() = %q; want %q", got, "a")
	}
	if got := s.Take(); got != "" {
		t.Fatalf("second Take() = %q; want \"\": a token is taken back once", got)
	}
}

// TestNewUniqueAcrossGoroutines: tokens made at once by many goroutines,
// which share the batches of randomness, never repeat (a batch handed out
// twice would repeat them, and the race detector would see it).
func TestNewUniqueAcrossGoroutines(t *testing.T) {
	const goroutines, each = 8, 2000
	toks := make([][]string, goroutines)
	var wg sync.WaitGroup
	for g := range toks {
		wg.Go(func() {
			for range each {
				toks[g] = append(toks[g], token.New())
			}
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, ts := range toks {
		for _, tok := range ts {
			if seen[tok] {
				t.Fatalf("New() repeated %q across goroutines", tok)
			}
			seen[tok] = true
		}
	}
}

// TestAppendPrefixed: Append puts a fresh token after what dst holds.
func TestAppendPrefixed(t *testing.T) {
	a := string(token.Append([]byte("n1.8000.")))
	b := string(token.Append([]byte("n1.8000.")))
	for _, s := range []string{a, b} {
		rest, ok := strings.CutPrefix(s, "n1.8000.")
		if raw, err := base64.RawURLEncoding.DecodeString(rest); !ok || err != nil || len(raw) != token.Size {
			t.Errorf("Append(%q) = %q; want the prefix and a %d-byte token", "n1.8000.", s, token.Size)
		}
	}
	if a == b {
		t.Errorf("Append twice gave %q both times", a)
	}
}
