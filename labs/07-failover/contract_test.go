package lab07_test

import (
	"testing"

	"github.com/locklab/locklab/labs"
	lab07 "github.com/locklab/locklab/labs/07-failover"
)

// The contract of a lock, besides the lesson: the exercise must keep every
// promise a lock makes (labs.ExerciseLockContract), and the reference does.

var _ = labs.RegisterError(lab07.ErrNotHeld, labs.LabelNotHeld)

var contract = labs.LockContract{
	// The lock waits for a replica's ack.
	Setup: func(s *labs.Scene) { s.Replicated(1) },
}

func TestLab07_ExerciseContract(t *testing.T) {
	labs.ExerciseLockContract(t, title, exercise, contract)
}

func TestLab07_FixedContract(t *testing.T) {
	labs.FixedLockContract(t, title, waitLock, contract)
}
