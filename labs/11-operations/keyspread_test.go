package lab11_test

import (
	"fmt"
	"strconv"
	"testing"
)

// One lock per order, over many orders: the key contract asks about a
// dozen ids, which a key bucketed into a thousand stripes passes by luck.
// Asked about spreadOrders ids, any number of buckets smaller than that
// shares a lock between two orders, whatever its hash.

// spreadOrders is how many order ids checkKeySpread asks about.
const spreadOrders = 20000

// checkKeySpread reports the first two of spreadOrders orders that key
// gives the same lock, or "" when every order has a lock of its own.
func checkKeySpread(key func(string) string) string {
	owner := make(map[string]string, spreadOrders)
	for i := 1; i <= spreadOrders; i++ {
		id := strconv.Itoa(i)
		k := key(id)
		if o, ok := owner[k]; ok {
			return fmt.Sprintf("LockKey(%q) and LockKey(%q) are both %q: two orders share one lock (found among %d orders after %d distinct keys). Stripes, buckets or a hash cut short make workers of unrelated orders wait for each other: one lock per order", o, id, k, spreadOrders, len(owner))
		}
		owner[k] = id
	}
	return ""
}

func TestLab11_FixedKeySpread(t *testing.T) {
	if v := checkKeySpread(func(id string) string { return "lock:order:" + id }); v != "" {
		t.Fatalf("Lab 11 (one lock per order) fixed: 1 violation\n  VIOLATION: %s", v)
	}
}
