package lab00_test

import (
	"testing"

	"github.com/locklab/locklab/labs"
)

// The contract of a lock, besides the lesson: the exercise must keep every
// promise a lock makes (labs.ExerciseLockContract), and the reference does.

var contract = labs.LockContract{
	// The exercise as shipped has no not-held sentinel: any error will do.
	NotHeld: func(err error) bool { return err != nil },
}

func TestLab00_ExerciseContract(t *testing.T) {
	labs.ExerciseLockContract(t, title, exercise, contract)
}

func TestLab00_FixedContract(t *testing.T) {
	labs.FixedLockContract(t, title, redisLock, contract)
}
