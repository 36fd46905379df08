// Package token makes lock tokens: 128 random bits from crypto/rand,
// encoded as 22 characters of unpadded URL-safe base64.
package token

import (
	"crypto/rand"
	"encoding/base64"
)

// Size is the number of random bytes in a token.
const Size = 16

// New returns a fresh token. crypto/rand.Read never fails on Linux (it
// panics only if the kernel's source is broken), so New returns no error.
func New() string {
	var b [Size]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
