package naive

import (
	"context"
	"sync"
	"time"
)

// HookBeforeRenew fires in [BlindRenewal]'s renewal goroutine right before
// each EXPIRE.
const HookBeforeRenew = "before-renew"

// BlindRenewal is a lock taken correctly (SET NX PX) and kept alive by the
// "watchdog" popular tutorials show: a goroutine that renews the key every
// ttl/3 with a plain EXPIRE (PEXPIRE here, for the labs' short TTLs).
//
//	go func() {
//		for range time.Tick(ttl / 3) {
//			client.Expire(ctx, key, ttl) // renewal; "owner check left out for brevity"
//		}
//	}()
//
// The mistake: EXPIRE does not check who holds the key, and nothing tells
// the holder when the lock is gone. If the holder's process stalls past the
// TTL (a GC pause, SIGSTOP), the key expires and another client takes it;
// when the holder resumes, its goroutine renews the other client's lock and
// the holder carries on as if it still held it. An owner-checked renewal
// (compare token, then PEXPIRE, in one script) that reports a lost lock to
// the holder is what package watchdog does.
//
// TryLock is SET NX PX and starts the renewal goroutine, which runs until
// Unlock; Unlock stops it and releases the lock with the owner-checked
// script.
//
// Use [NewBlindRenewal]; a BlindRenewal must not be copied after first use.
type BlindRenewal struct {
	lock

	rmu  sync.Mutex    // protects stop and done
	stop chan struct{} // closed by Unlock to end the renewal goroutine
	done chan struct{} // closed when the renewal goroutine has ended
}

// NewBlindRenewal returns the lock for key on client.
func NewBlindRenewal(client Client, key string, opts ...Option) *BlindRenewal {
	m := &BlindRenewal{}
	m.init(client, key, opts, steps{tryLock: m.lockAndRenew, unlock: m.stopAndRelease})
	return m
}

// lockAndRenew is TryLock: it takes the lock with SET NX PX and starts the
// renewal goroutine, which runs until Unlock.
func (m *BlindRenewal) lockAndRenew(ctx context.Context) (bool, error) {
	ok, err := m.setNXPX(ctx)
	if ok {
		m.startRenewal(context.WithoutCancel(ctx))
	}
	return ok, err
}

// stopAndRelease is Unlock: it stops the renewal goroutine and releases the
// lock with the owner-checked script.
func (m *BlindRenewal) stopAndRelease(ctx context.Context) error {
	m.stopRenewal()
	return m.release(ctx)
}

func (m *BlindRenewal) startRenewal(ctx context.Context) {
	m.rmu.Lock()
	defer m.rmu.Unlock()
	m.stop, m.done = make(chan struct{}), make(chan struct{})
	go m.renew(ctx, m.stop, m.done)
}

func (m *BlindRenewal) stopRenewal() {
	m.rmu.Lock()
	stop, done := m.stop, m.done
	m.stop, m.done = nil, nil
	m.rmu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}

// renew is the tutorial's watchdog: EXPIRE every ttl/3 until stopped,
// whoever holds the key, never noticing a loss.
func (m *BlindRenewal) renew(ctx context.Context, stop, done chan struct{}) {
	defer close(done)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { // a hook parked in a renewal must not outlive Unlock
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	t := time.NewTicker(m.opts.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		m.hook(ctx, HookBeforeRenew)
		if ctx.Err() != nil {
			return
		}
		_ = m.client.PExpire(ctx, m.key, m.opts.ttl).Err() // no owner check; errors ignored, as in the tutorial
	}
}
