package lab12_test

import (
	"testing"

	"github.com/locklab/locklab/labs"
)

// The contract of a lock, besides the lesson: the exercise must keep every
// promise a lock makes (labs.ExerciseLockContract), and the reference does.

var contract = labs.LockContract{Reentrant: true}

func TestLab12_ExerciseContract(t *testing.T) {
	labs.ExerciseLockContract(t, title, exercise, contract)
}

func TestLab12_FixedContract(t *testing.T) {
	labs.FixedLockContract(t, title, labs.Reentrant, contract)
}
