package redlock

import (
	"context"
	"errors"
	"fmt"

	"github.com/locklab/locklab/internal/preflight"
	"github.com/locklab/locklab/internal/retry"
)

// This file is the check of the nodes before Lock and TryLock (package
// preflight): eviction and scripting rights, remembered for a minute.

// ready returns an error if ctx has ended or a node is unfit for a lock
// (see package preflight); the check runs once a minute per node. It
// returns once a majority of nodes passed: a node that cannot be reached,
// or is slow, is left to the rounds (a minority may be down), and its
// check goes on in the background, within the per-node timeout. It returns
// when ctx ends, whatever the checks still running.
func (m *Mutex) ready(ctx context.Context) error {
	if err := retry.CtxErr(ctx); err != nil {
		return errors.Join(ErrNotObtained, err)
	}
	// Most Locks find every result remembered: no goroutine, no round trip.
	passed := 0
	for i := range m.gates {
		err, ok := m.gates[i].Remembered()
		switch {
		case !ok:
		case err != nil:
			return fmt.Errorf("redlock: lock %q: %w", m.key, &NodeError{Index: i, Addr: m.addrs[i], Err: err})
		default:
			passed++
		}
	}
	if passed >= m.quorum() {
		return nil
	}
	results := make(chan error, len(m.clients)) // room for all: no goroutine blocks
	m.inflight.add(len(m.clients))
	for i := range m.gates {
		go func() {
			defer m.inflight.done()
			pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.o.nodeTimeout)
			defer cancel()
			err := m.gates[i].Inspect(pctx)
			switch {
			case errors.Is(err, preflight.ErrEviction) || errors.Is(err, preflight.ErrNoScripting):
				results <- &NodeError{Index: i, Addr: m.addrs[i], Err: err}
			case err != nil:
				results <- errSkipped
			default:
				results <- nil
			}
		}()
	}
	passed = 0
	for range m.clients {
		var err error
		select {
		case err = <-results:
		case <-ctx.Done():
			return errors.Join(ErrNotObtained, retry.CtxErr(ctx)) // the checks end within the per-node timeout
		}
		switch {
		case err == nil:
			if passed++; passed == m.quorum() {
				return nil
			}
		case err != errSkipped:
			return fmt.Errorf("redlock: lock %q: %w", m.key, err)
		}
	}
	return nil // too few reachable: the rounds will say so
}

// errSkipped marks a node whose preflight check could not run.
var errSkipped = errors.New("redlock: check skipped")
