package lab05_test

import (
	"testing"

	"github.com/locklab/locklab/labs"
)

// The contract of a lock, besides the lesson: the exercise must keep every
// promise a lock makes (labs.ExerciseLockContract), and the reference does.

var contract = labs.LockContract{Renews: true}

func TestLab05_ExerciseContract(t *testing.T) {
	labs.ExerciseLockContract(t, "Lab 05 (the lease too short)", exercise, contract)
}

func TestLab05_FixedContract(t *testing.T) {
	labs.FixedLockContract(t, "Lab 05 (the lease too short)", watchdogLock, contract)
}
