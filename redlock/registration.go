package redlock

import (
	"sync"
)

// This file is how a Notifier knows its waiters: each waiting Lock's
// registration, which counts the nodes handed to its current token.

// register returns the registration through which the waiter id will
// learn of hand-offs.
func (n *Notifier) register(id string) (*registration, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, errNotifierClosed
	}
	r := &registration{n: n, quorum: len(n.addrs)/2 + 1, handed: make([]bool, len(n.addrs)), signal: make(chan struct{}, 1), recheck: make(chan struct{}, 1)}
	n.waiters[id] = r
	return r, nil
}

func (n *Notifier) unregister(id string) {
	n.mu.Lock()
	delete(n.waiters, id)
	n.mu.Unlock()
}

// enter counts a Lock on key in (until the returned leave is called) and
// reports whether another Lock of this Notifier was already in for key:
// trying its SET round or waiting in the queues. A new Lock's SET would
// then be refused (or race the other's), so it joins the queues at once: a
// burst of Locks in one process pays one SET round, not one each.
func (n *Notifier) enter(key string) (others bool, leave func()) {
	n.mu.Lock()
	others = n.entered[key] > 0
	n.entered[key]++
	n.mu.Unlock()
	return others, func() {
		n.mu.Lock()
		if n.entered[key]--; n.entered[key] <= 0 {
			delete(n.entered, key)
		}
		n.mu.Unlock()
	}
}

// A registration is one waiting Lock as its Notifier sees it.
type registration struct {
	n       *Notifier
	quorum  int           // hand-offs that make a majority
	signal  chan struct{} // has a value when the waiter should look at handed
	recheck chan struct{} // has a value when the waiter should run a round now

	held bool // the lock is held: messages are old news (see route); guarded by the Notifier's mu

	mu      sync.Mutex    // protects gen, round, handed, count and majorCh
	gen     int           // the generation of the waiter's current token
	round   *attempt      // the round that sent that token
	handed  []bool        // nodes that hold that token: handed it, or took it in the round
	count   int           // how many are true in handed
	majorCh chan struct{} // closed when count reaches quorum (see majority)
}

// hold marks the waiter as holding the lock; see route.
func (r *registration) hold() { r.n.mu.Lock(); r.held = true; r.n.mu.Unlock() }

// handedOver records that node i holds generation gen's token: a hand-off,
// or the reply of the round that sent it. It wakes the
// waiter only at the first hand-off of a generation (to time a split) and
// when a majority is reached, not at every message.
func (r *registration) handedOver(i, gen int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if gen != r.gen {
		return false
	}
	if r.handed[i] {
		return true
	}
	r.handed[i] = true
	r.count++
	if r.count == r.quorum && r.majorCh != nil {
		close(r.majorCh)
	}
	if r.count == 1 || r.count == r.quorum {
		select {
		case r.signal <- struct{}{}:
		default:
		}
	}
	return true
}

// current reports whether gen is the waiter's current generation.
func (r *registration) current(gen int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return gen == r.gen
}

// look asks the waiter to run a round now: a subscription was down, and
// releases may have passed it by.
func (r *registration) look() {
	select {
	case r.recheck <- struct{}{}:
	default:
	}
}

// setGen starts a new generation, sent by round a: hand-offs to older
// tokens no longer count. It is called before the new token is sent
// anywhere.
func (r *registration) setGen(gen int, a *attempt) {
	r.mu.Lock()
	r.gen, r.round = gen, a
	clear(r.handed)
	r.count = 0
	r.majorCh = make(chan struct{})
	r.mu.Unlock()
}

// majority returns a channel closed once a majority of nodes hold the
// current generation's token (replies of its round and hand-offs alike):
// the round that sent it need not wait for the other nodes.
func (r *registration) majority() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.majorCh
}

// previous returns, for a hand-off to generation gen by node i, when gen
// is the one just before the current generation, a channel closed once
// the current round's call to node i has ended; otherwise nil. A node
// handed to the previous token before that round reached it is the
// round's to keep: acquire.lua finds the old token in the key and renames
// it, if the waiter is still the best there. Released at once instead, the
// node would go to the next waiter, and a waiter between two rounds would
// lose its turn (a split, and FIFO broken).
func (r *registration) previous(i, gen int) <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if gen != r.gen-1 || r.round == nil {
		return nil
	}
	return r.round.ended[i]
}

// take marks in held the nodes that handed the current generation over.
func (r *registration) take(held []bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, h := range r.handed {
		held[i] = held[i] || h
	}
}
