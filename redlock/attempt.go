package redlock

import (
	"context"
	"sync/atomic"

	"github.com/locklab/locklab/internal/retry"
)

// This file is an attempt: one token's claim on the nodes, and what giving
// it up must undo on a node whose call is still on its way.

// An attempt is one token's claim on the nodes: a SET round, or one
// generation of a waiter's rounds. Its calls may still be running on slow
// nodes when it is given up (released, failed, retired): a SET that lands
// then would leave our key on that node for a TTL, and a round that lands
// would leave our token in the queue. So each node's call and the giving
// up meet once: whichever comes second releases that node (see landed and
// giveUp), and a node whose call ended is released at once by the caller.
type attempt struct {
	m     *Mutex
	tok   string
	kind  attemptKind
	state []atomic.Int32  // per node: callRunning, callEnded or releaseOnEnd
	ended []chan struct{} // per node, for a waiter's round: closed when its call has ended
	// earlier are the tokens of the same Lock's earlier SET rounds whose
	// fate on some node was unknown (its call failed, or timed out): such
	// a SET can land after its round's cleanup, and hold the node for a
	// TTL. A SET round that finds one of them on a node releases it there
	// and asks again (see setRound).
	earlier []string
}

// attemptKind says what an attempt sends: a SET round, of a Lock that
// polls or of one that joins the queues next, or a waiter's round.
type attemptKind int

const (
	// setOnly is a SET round of a Lock that polls, or of TryLock.
	setOnly attemptKind = iota
	// setThenQueue is the SET round of a Lock that joins the queues if it
	// misses: the queues' first round comes next and retires tok
	// (acquire.lua's ARGV[4]), which takes a node holding it as free.
	setThenQueue
	// queueRound is a waiter's round in the queues (acquire.lua).
	queueRound
)

// The states of one node's call in an attempt.
const (
	callRunning  = iota // the call has not ended, and the attempt lives
	callEnded           // the call ended first: the caller releases the node
	releaseOnEnd        // the attempt was given up first: the call releases it
)

func (m *Mutex) newAttempt(tok string, kind attemptKind) *attempt {
	a := &attempt{m: m, tok: tok, kind: kind, state: make([]atomic.Int32, len(m.clients))}
	if kind == queueRound { // a waiter's Notifier may wait for them (registration.previous)
		a.ended = make([]chan struct{}, len(m.clients))
		for i := range a.ended {
			a.ended[i] = make(chan struct{})
		}
	}
	return a
}

// landed is fanOut's done callback: node i's call has ended. If the
// attempt was given up meanwhile, the node is released here, unless the
// call was a SET round's take.lua that changed nothing (it found someone
// else's key, or tok released already).
func (a *attempt) landed(i int, code int64, err error) {
	if a.ended != nil {
		defer close(a.ended[i])
	}
	if a.state[i].CompareAndSwap(callRunning, callEnded) {
		return
	}
	if a.kind != queueRound && err == nil && code == 0 {
		return
	}
	call := func(ctx context.Context, i int, c Client) (int64, error) {
		return runRelease(ctx, c, a.m.releaseKeys(a.tok), a.tok, a.m.receiptMS, "1")
	}
	ctx, cancel := retry.Detach(context.Background())
	defer cancel()
	if _, err := call(ctx, i, a.m.clients[i]); isTimeout(err) {
		a.m.sweep(context.Background(), i, call) // a busy node: until it answers
	}
}

// giveUp ends the attempt. It returns, per node, whether the caller must
// release that node now (its call has ended); a node whose call is still
// running is released by the call when it ends.
func (a *attempt) giveUp() (now []bool) {
	now = make([]bool, len(a.state))
	for i := range a.state {
		now[i] = !a.state[i].CompareAndSwap(callRunning, releaseOnEnd)
	}
	return now
}
