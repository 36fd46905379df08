package token_test

import (
	"encoding/base64"
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
