package labs

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/locklab/locklab/correct"
	"github.com/locklab/locklab/fencing"
	"github.com/locklab/locklab/naive"
	"github.com/locklab/locklab/redlock"
	"github.com/locklab/locklab/reentrant"
	"github.com/locklab/locklab/watchdog"
)

// The error registry. An error registered with [RegisterError] keeps its
// identity across the pipe from a child process (errors.Is sees it) and is
// named on the timeline by its label.

var (
	errsMu sync.Mutex // protects errs
	errs   []knownError
)

type knownError struct {
	err   error
	label string
}

// Labels the harness gives meaning to.
const (
	// LabelNotHeld is the label of every "not held" sentinel: an Unlock or
	// Extend of a lock the caller does not hold. [NotHeld] looks for it.
	LabelNotHeld = "not held"
)

// RegisterError lets errors.Is see err through a client in another process,
// and names it on the timeline with label ("not held"). Register sentinel
// errors once, from package-level vars. A lab's own ErrNotHeld registered
// with [LabelNotHeld] is one [NotHeld] recognises.
func RegisterError(err error, label string) error {
	errsMu.Lock()
	defer errsMu.Unlock()
	errs = append(errs, knownError{err, label})
	return err
}

// The lock packages' sentinel errors, registered once so every lab names
// them the same way on its timeline. A lab registers only its own (an
// exercise's ErrNotHeld, say).
func init() {
	for _, err := range []error{
		naive.ErrNotHeld, correct.ErrNotHeld, watchdog.ErrNotHeld,
		reentrant.ErrNotHeld, redlock.ErrNotHeld, fencing.ErrNotHeld,
	} {
		RegisterError(err, LabelNotHeld)
	}
	RegisterError(redlock.ErrQuorumUnreachable, "quorum unreachable")
	RegisterError(fencing.ErrStaleToken, "stale token")
	RegisterError(context.Canceled, "context canceled")
	RegisterError(context.DeadlineExceeded, "deadline exceeded")
}

// NotHeld reports whether err is a "not held" answer from an Unlock: any
// error registered with [LabelNotHeld], in this process or in a child.
func NotHeld(err error) bool { return err != nil && slices.Contains(labels(err), LabelNotHeld) }

// labels returns the labels of the registered errors err matches.
func labels(err error) []string {
	errsMu.Lock()
	known := slices.Clone(errs)
	errsMu.Unlock() // unlocked: errors.Is may call remoteError.Is, which locks
	var out []string
	for _, k := range known {
		if errors.Is(err, k.err) && !slices.Contains(out, k.label) {
			out = append(out, k.label)
		}
	}
	return out
}

// describeErr is an error's text on the timeline: its registered labels,
// or its message.
func describeErr(err error) string {
	if l := labels(err); len(l) > 0 {
		return strings.Join(l, ", ")
	}
	return err.Error()
}

// remoteError is an error that crossed the wire from a client. errors.Is
// matches the registered errors the original matched.
type remoteError struct {
	msg    string
	labels []string
}

func (e *remoteError) Error() string { return e.msg }

func (e *remoteError) Is(target error) bool {
	errsMu.Lock()
	defer errsMu.Unlock()
	for _, k := range errs {
		if k.err == target && slices.Contains(e.labels, k.label) {
			return true
		}
	}
	return false
}

// errClientGone is the error of calls cut off by the client's death.
var errClientGone = errors.New("client gone")

// IsGone reports whether err is a call cut off because its client was
// killed or exited.
func IsGone(err error) bool { return errors.Is(err, errClientGone) }
