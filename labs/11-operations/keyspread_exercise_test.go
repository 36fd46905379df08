//go:build exercise

package lab11_test

import (
	"fmt"
	"testing"

	lab11 "github.com/locklab/locklab/labs/11-operations"
)

func TestLab11_ExerciseKeySpread(t *testing.T) {
	const head = "Lab 11 (one lock per order, over many orders) exercise: "
	if v := checkKeySpread(lab11.LockKey); v != "" {
		fmt.Printf("%s1 violation ... FAIL\n", head)
		t.Fatalf("%s1 violation\n  VIOLATION: %s", head, v)
	}
	fmt.Printf("%sno violation ... ok  %d orders\n", head, spreadOrders)
}
