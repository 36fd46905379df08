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
