// Package token makes lock tokens: 128 random bits from crypto/rand,
// encoded as 22 characters of unpadded URL-safe base64.
package token

import (
	"crypto/rand"
	"encoding/base64"
	"sync"
)

// Size is the number of random bytes in a token.
const Size = 16

// Len is the number of characters in a token.
const Len = 22 // base64.RawURLEncoding.EncodedLen(Size)

// New returns a fresh token. crypto/rand.Read never fails on Linux (it
// panics only if the kernel's source is broken), so New returns no error.
// It allocates the string and nothing else.
func New() string {
	var buf [Len]byte
	return string(Append(buf[:0]))
}

// Append appends a fresh token to dst and returns the extended slice: for
// a token with a prefix (a Notifier's waiter token names its channel),
// made in one allocation.
func Append(dst []byte) []byte {
	var b [Size]byte
	read(&b)
	return base64.RawURLEncoding.AppendEncode(dst, b[:])
}

// Randomness is read from crypto/rand a batch at a time: a read costs a
// call into the kernel besides the bytes themselves, about as much as the
// 16 bytes of one token, and every Lock makes a token. A batch belongs to
// one goroutine at a time (it is taken out of the pool, used, and put
// back), and each of its bytes goes into one token only: n counts the
// bytes handed out, and they are cleared once copied. A batch the pool
// drops (at a garbage collection) takes its unread bytes with it.
type batch struct {
	b [batchTokens * Size]byte
	n int // bytes of b handed out; len(b) when b must be read again
}

// batchTokens is how many tokens' randomness one read fetches.
const batchTokens = 16

var batches = sync.Pool{New: func() any { return &batch{n: batchTokens * Size} }}

// read fills b with random bytes from crypto/rand, by way of a batch.
func read(b *[Size]byte) {
	r := batches.Get().(*batch)
	if r.n == len(r.b) {
		_, _ = rand.Read(r.b[:])
		r.n = 0
	}
	next := r.b[r.n : r.n+Size]
	copy(b[:], next)
	clear(next)
	r.n += Size
	batches.Put(r)
}
