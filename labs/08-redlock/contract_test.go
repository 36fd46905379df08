package lab08_test

import (
	"testing"

	"github.com/locklab/locklab/labs"
)

// The contract of a lock, besides the lesson: the exercise must keep every
// promise a lock makes (labs.ExerciseLockContract), and the reference does.

var contract = labs.LockContract{Nodes: 5, NodeRefusalIsNo: true}

func TestLab08_ExerciseContract(t *testing.T) {
	labs.ExerciseLockContract(t, "Lab 08 (Redlock)", exercise, contract)
}

func TestLab08_FixedContract(t *testing.T) {
	labs.FixedLockContract(t, "Lab 08 (Redlock)", redlockImpl, contract)
}
