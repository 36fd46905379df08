package fencing

import (
	"fmt"
	"strconv"

	"github.com/locklab/locklab/internal/keyslot"
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
// touches both (see internal/keyslot): "{orders}:fence" for "orders",
// "{orders}:lock:fence" for "{orders}:lock", and for a key with a "}" but
// no hash tag ("a}b"), which cannot be a tag itself, a tag found to share
// its slot. Only the empty key is refused.
func counterKey(key string) (string, error) {
	if key == "" {
		return "", fmt.Errorf("%w: empty key", ErrInvalid)
	}
	return keyslot.Base(key) + counterSuffix, nil
}
