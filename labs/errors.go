package labs

import (
	"github.com/locklab/locklab/correct"
	"github.com/locklab/locklab/fencing"
	"github.com/locklab/locklab/naive"
	"github.com/locklab/locklab/redlock"
	"github.com/locklab/locklab/reentrant"
	"github.com/locklab/locklab/watchdog"
)

// The lock packages' sentinel errors, registered once so every lab names
// them the same way on its timeline. A lab registers only its own (an
// exercise's ErrNotHeld, say).
func init() {
	for _, err := range []error{
		naive.ErrNotHeld, correct.ErrNotHeld, watchdog.ErrNotHeld,
		reentrant.ErrNotHeld, redlock.ErrNotHeld, fencing.ErrNotHeld,
	} {
		RegisterError(err, "not held")
	}
	RegisterError(redlock.ErrQuorumUnreachable, "quorum unreachable")
	RegisterError(fencing.ErrStaleToken, "stale token")
}
