package labs

import (
	"fmt"
	"testing"
)

// The contract of a lock's key function (lab 11's exercise), said once:
// one lock per order, the same for every caller.

// contractOrders are the ids the key contract asks about: neighbours,
// prefixes of one another, and ids that differ only past their fourth
// character, so that a key cut short or bucketed shares a lock.
var contractOrders = []string{"1", "10", "100", "1000", "1001", "1002", "10010", "10011", "2001", "20010", "ab-1", "ab-10"}

// ExerciseKeyContract runs the key contract on the lab's exercise: built
// with -tags exercise, it demands that key gives the same answer for the
// same order every time it is asked, and a different one for every other
// order (no two orders share a lock: neither a lock for all, nor buckets,
// nor a key cut short). Without the tag it skips.
func ExerciseKeyContract(t *testing.T, title string, key func(orderID string) string) {
	t.Helper()
	if !exerciseMode {
		t.Skipf("the contract of a lock key runs on your exercise with -tags exercise (make exercise LAB=%s)", labNumber())
	}
	checkKeyContract(t, title+" contract", "exercise", key)
}

// FixedKeyContract runs the key contract on a lab's reference key.
func FixedKeyContract(t *testing.T, title string, key func(orderID string) string) {
	t.Helper()
	checkKeyContract(t, title+" contract", "fixed", key)
}

func checkKeyContract(t *testing.T, title, label string, key func(string) string) {
	t.Helper()
	head := title + " " + label + ": "
	fail := func(format string, args ...any) {
		fmt.Printf("%s1 violation ... FAIL\n", head)
		t.Fatalf("%s1 violation\n  VIOLATION: %s", head, fmt.Sprintf(format, args...))
	}
	owner := map[string]string{}
	for _, id := range contractOrders {
		k := key(id)
		switch {
		case k == "":
			fail("LockKey(%q) is empty", id)
		case key(id) != k:
			fail("LockKey(%q) answered %q, then %q: every worker must get the same key for the same order", id, k, key(id))
		case owner[k] != "":
			fail("LockKey(%q) and LockKey(%q) are both %q: two orders share one lock, and their workers wait for each other (one lock per order)", owner[k], id, k)
		}
		owner[k] = id
	}
	fmt.Printf("%sno violation ... ok  %d orders\n", head, len(contractOrders))
}
