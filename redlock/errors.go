package redlock

import (
	"errors"
	"fmt"

	"github.com/locklab/locklab/internal/preflight"
)

// ErrNotObtained is returned by [Mutex.Lock] when it gives up: every
// attempt either lost to other holders (no majority of nodes was free) or
// reached a majority too late (the validity left was not positive), and the
// tries ran out. When the context ended the wait, the error is
// errors.Join(ErrNotObtained, ctx.Err()). With a [Notifier], Lock gives up
// only when its context ends or the Notifier is closed (the error then
// says so), after leaving the queues. [Mutex.TryLock] returns it, wrapped,
// for an attempt that reached a majority with no validity left, and joined
// with ctx.Err() as Lock does; contention alone is (false, nil).
var ErrNotObtained = errors.New("redlock: lock not obtained")

// ErrNotHeld is returned by [Mutex.Unlock] and [Mutex.Extend] when this
// Mutex does not hold the lock: it was never locked, already unlocked, or
// its token is no longer on the nodes (expired or taken over). Extend also
// returns it, wrapped, when too few nodes could be extended in time.
var ErrNotHeld = errors.New("redlock: lock not held")

// ErrInvalid is wrapped by the error every method returns when [New] got
// invalid arguments: no clients, a nil client, the same address twice, an
// empty key, or an invalid option value. The message names the argument.
var ErrInvalid = errors.New("redlock: invalid argument")

// ErrQuorumUnreachable is returned, joined with one [NodeError] per failed
// node, when so many nodes failed that a majority could not be reached
// whatever the other nodes answered. Lock returns it at once when nodes
// refused or failed (waiting cannot help until they come back, and
// spinning against them would only hide the outage); when they only did
// not answer within the per-node timeout, as busy nodes on a loaded machine
// do, Lock tries again while its context lives. TryLock and Extend return
// it at once. [NewNotifier] returns it when it could not subscribe on a
// majority of the nodes.
var ErrQuorumUnreachable = errors.New("redlock: quorum unreachable")

// NodeError is the failure of one node during an operation: a transport
// error from its client, or no reply within the per-node timeout (see
// [WithNodeTimeout]). Errors that carry several are made with errors.Join,
// so errors.As finds the first and walking Unwrap() []error finds them all.
type NodeError struct {
	Index int    // position of the node's client in the slice given to New
	Addr  string // the node's address, or "" if its client does not report one
	Err   error  // what went wrong
}

// Error returns "redlock: node <index> (<addr>): <err>".
func (e *NodeError) Error() string {
	if e.Addr == "" {
		return fmt.Sprintf("redlock: node %d: %v", e.Index, e.Err)
	}
	return fmt.Sprintf("redlock: node %d (%s): %v", e.Index, e.Addr, e.Err)
}

// Unwrap returns the node's error, so errors.Is(err, context.Canceled) and
// the like see through it.
func (e *NodeError) Unwrap() error { return e.Err }

// errNodeTimeout is the Err of a NodeError for a node that did not reply
// within the per-node timeout.
var errNodeTimeout = errors.New("no reply within the per-node timeout")

// ErrEviction is wrapped by the error Lock and TryLock return for a node
// that may evict keys (maxmemory with a policy other than noeviction): an
// evicted lock key lets a second holder in, and nobody is told. See
// [WithEvictionCheck]. It is one error value in every locklab package.
var ErrEviction = preflight.ErrEviction

// ErrNoScripting is wrapped by the error Lock and TryLock return when the
// user may not run the lock's scripts (its ACL lacks EVALSHA or EVAL):
// the lock would be taken, and could never be released. It is one error
// value in every locklab package.
var ErrNoScripting = preflight.ErrNoScripting
