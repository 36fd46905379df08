package lab11_test

import (
	"testing"

	"github.com/locklab/locklab/labs"
	lab11 "github.com/locklab/locklab/labs/11-operations"
)

// The contract of a lock key, besides the lesson's order rush: the same
// key for the same order, a different one for every other order.

func TestLab11_ExerciseContract(t *testing.T) {
	labs.ExerciseKeyContract(t, "Lab 11 (one lock per order)", lab11.LockKey)
}

func TestLab11_FixedContract(t *testing.T) {
	labs.FixedKeyContract(t, "Lab 11 (one lock per order)", func(id string) string { return "lock:order:" + id })
}
