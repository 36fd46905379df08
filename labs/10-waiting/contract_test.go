package lab10_test

import (
	"testing"

	"github.com/locklab/locklab/labs"
)

// The contract of a lock, besides the lesson: the exercise must keep every
// promise a lock makes (labs.ExerciseLockContract), and the reference does.

var contract = labs.LockContract{Waiting: true}

func TestLab10_ExerciseContract(t *testing.T) {
	labs.ExerciseLockContract(t, "Lab 10 (waiting for a lock)", exercise, contract)
}

func TestLab10_FixedContract(t *testing.T) {
	labs.FixedLockContract(t, "Lab 10 (waiting for a lock)", wakeAll, contract)
}
