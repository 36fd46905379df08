package fencing

import (
	"fmt"
	"strconv"
	"strings"
)

// Token is a fencing token: the number an acquisition of the lock was given.
// On one key, every acquisition gets a token strictly larger than every
// earlier one (see the package doc for when that fails). Zero is never
// issued; it means "no token".
//
// Token is unsigned because a token counts acquisitions and cannot be
// negative. Every token issued fits in an int64 too: Redis's INCR stops
// with an overflow error at 2^63-1, and SQL INTEGER columns are signed 64-bit,
// so [Store] rejects larger values as invalid.
type Token uint64

// String returns the token in decimal.
func (t Token) String() string { return strconv.FormatUint(uint64(t), 10) }

// counterSuffix ends the name of the counter key; see counterKey.
const counterSuffix = ":fence"

// counterKey returns the key of the token counter for lock key, which must
// hash to the same Redis Cluster slot as key because the acquire script
// touches both. Redis Cluster hashes only a key's hash tag (the text between
// the first "{" and the next "}", when not empty) or, without a tag, the
// whole key.
//
//   - key has a hash tag ("{orders}:lock"): the counter is key+":fence"
//     ("{orders}:lock:fence"), which keeps the tag.
//   - key has no tag and no "}" ("orders"): the counter is "{"+key+"}:fence"
//     ("{orders}:fence"), whose tag is key itself, so it hashes like key.
//   - key has no tag but a "}" ("a}b", "x{}y"): no counter name can share
//     its slot, so the key is refused.
func counterKey(key string) (string, error) {
	if key == "" {
		return "", fmt.Errorf("%w: empty key", ErrInvalid)
	}
	if hasHashTag(key) {
		return key + counterSuffix, nil
	}
	if strings.Contains(key, "}") {
		return "", fmt.Errorf("%w: key %q has a '}' but no {hash tag}; "+
			"use a key without braces or with a tag such as {name}", ErrInvalid, key)
	}
	return "{" + key + "}" + counterSuffix, nil
}

// hasHashTag reports whether Redis Cluster would hash key by a tag: a "{"
// followed later by a "}" with at least one character between them.
func hasHashTag(key string) bool {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return false
	}
	end := strings.IndexByte(key[open+1:], '}')
	return end > 0
}
