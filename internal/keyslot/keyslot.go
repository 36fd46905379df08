// Package keyslot names the keys a lock keeps beside its own (a wait
// queue, a fencing counter, release receipts) so that they share the lock
// key's Redis Cluster slot, as a script that touches both requires, and
// so that no two lock keys share them.
//
// Redis Cluster hashes a key by its hash tag, the text between the first
// "{" and the next "}" when that is not empty, or else by the whole key.
// [Base] returns a prefix that hashes like the key:
//
//   - a key with a tag ("lock:{orders}:7") is its own base: anything
//     appended keeps the tag;
//   - a key without a "}" ("orders:7", "a{b") becomes the tag itself,
//     "{orders:7}", which hashes like the key;
//   - a key with a "}" but no tag ("orders}7", "a{}b") cannot be a tag, as
//     the "}" would end it early (nor can the empty key: "{}" is no tag). Its base is "{" + the key with "%" and
//     "}" escaped + "#" + a number, the first number that puts the tag in
//     the key's slot (found in well under a millisecond).
//
// Before this, the third kind of key got a queue in another slot: Lock
// worked and every Unlock failed with CROSSSLOT.
package keyslot

import (
	"strconv"
	"strings"
)

// slots is the number of Redis Cluster hash slots.
const slots = 16384

// Tag returns the part of key that Redis Cluster hashes, and whether key
// has a hash tag.
func Tag(key string) (string, bool) {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j], true
		}
	}
	return key, false
}

// Slot returns key's Redis Cluster hash slot, as CLUSTER KEYSLOT does.
func Slot(key string) int {
	tag, _ := Tag(key)
	return int(crc16(tag) % slots)
}

// Base returns the prefix for the keys kept beside key: Base(key)+suffix is
// in key's slot for any suffix without braces, and Base(k1) != Base(k2) for
// different keys without a hash tag. Keys that share a hash tag share
// nothing but the slot: their bases are the keys themselves.
func Base(key string) string {
	if _, tagged := Tag(key); tagged {
		return key
	}
	if key != "" && !strings.Contains(key, "}") {
		return "{" + key + "}"
	}
	esc := strings.NewReplacer("%", "%25", "}", "%7D").Replace(key)
	want := Slot(key)
	for n := 0; ; n++ {
		tag := esc + "#" + strconv.Itoa(n)
		if int(crc16(tag)%slots) == want {
			return "{" + tag + "}"
		}
	}
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0), the
// checksum Redis Cluster's key slots are computed with.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// Receipt returns the key of the receipt a release of the lock with base
// (see [Base]) leaves for token: a second run of the release, when its
// first reply was lost, answers from it. Receipts expire after a few
// seconds (see internal/retry's ReceiptTTL).
func Receipt(base, token string) string { return base + ":r:" + token }

// IsReceipt reports whether key is a release receipt of lockKey's.
func IsReceipt(lockKey, key string) bool {
	return strings.HasPrefix(key, Base(lockKey)+":r:")
}
