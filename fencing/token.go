package fencing

// Keys.
//
// Besides the lock key, each lock has a counter key holding the last token
// issued. The acquire script touches both, so in Redis Cluster they must be
// in one hash slot. The counter's name is derived from the lock key:
//
//   - a key with a {hash tag}, such as "{orders}:lock", gets the counter
//     "{orders}:lock:fence", which keeps the tag;
//   - a key with no tag and no '}', such as "orders", gets "{orders}:fence",
//     whose tag is the whole key, which is what Cluster hashes a key without
//     a tag by;
//   - a key with a '}' but no tag (such as "a}b"), which cannot be a tag,
//     gets "{a%7Db#<n>}:fence", with the first n that puts it in the key's
//     slot.
//
// The lock key itself is used as given. The counter is never deleted, not on
// Unlock and not when the lease runs out: tokens must keep growing across
// holders. The cost is one small key per lock name left in Redis for good
// (Redisson's RFencedLock has the same: its issue #6510 reports 25 million of
// them), so lock names should come from a bounded set, not from request ids.
// Deleting a counter restarts its tokens at 1, which a store that has seen
// larger ones rejects (safe, but the resource is stuck until the counter
// passes the old maximum).
//

import (
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
		return "", invalid("empty key")
	}
	return keyslot.Base(key) + counterSuffix, nil
}
