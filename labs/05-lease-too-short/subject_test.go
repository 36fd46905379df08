package lab05_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/labs"
	"github.com/locklab/locklab/watchdog"
)

// subject is a lock under test in lab 05, as one client holds it. It adds
// nothing to the lock's behaviour; it lets the lab see what the lock does
// on its own, in the background, where no operation of the scenario is
// running: it narrates, in the client's lane, the moment Done closes
// (the lock gave up on the hold) and a renewal that lands on someone
// else's key. Narration starts when the scenario asks for it (see
// [narrate]).
type subject struct {
	inner labs.Locker
	// detach holds the lock under a context that outlives the "lock"
	// operation: see holdCtx.
	detach bool
	// gate, in an explored run, holds the watchdog's renewals until the
	// schedule grants them (see gate); nil otherwise.
	gate *gate
	ops  atomic.Int32 // the lock's operations under way: their commands are not the watchdog's

	mu   sync.Mutex // protects note, told and hold
	note func(format string, args ...any)
	told bool          // a foreign renewal was narrated already
	hold chan struct{} // closed by Unlock; nil when not held
}

// holdCtx is the context a lock is held under. A watchdog.Mutex renews its
// lock only as long as the context given to Lock lives, so a deadline
// given to Lock (LockWithin: how long a client is willing to wait) would
// bound the hold as well as the wait. So a watchdog is locked with a
// context that keeps ctx's values but not its cancellation, as a service
// would pass its long-lived context, and Unlock ends the hold. The wait
// for the lock is still bounded by ctx.
func (m *subject) holdCtx(ctx context.Context) context.Context {
	if m.detach {
		return context.WithoutCancel(ctx)
	}
	return ctx
}

// gated makes m a gated subject when e asks for it (the Param gated=on):
// its watchdog's commands wait at a gate (see gate).
func (m *subject) gated(e *labs.Env) {
	if e.Param(gatedParam, "") != "on" {
		return
	}
	m.gate = newGate(e.Hook)
	e.Redis(0).AddHook(gateHook{m})
	e.Defer(m.gate.release)
}

// background reports whether a command sent with ctx is the watchdog's:
// sent while none of the lock's operations runs (the spy's reads aside).
func (m *subject) background(ctx context.Context) bool {
	return ctx.Value(spyKey{}) == nil && m.ops.Load() == 0
}

// op counts one of the lock's operations while it runs; call the result
// when it returns.
func (m *subject) op() func() {
	m.ops.Add(1)
	return func() { m.ops.Add(-1) }
}

// Lock takes the lock. A detached lock polls TryLock every 5ms, so that
// ctx bounds only the wait.
func (m *subject) Lock(ctx context.Context) error {
	if !m.detach {
		end := m.op()
		err := m.inner.Lock(ctx)
		end()
		if err != nil {
			return err
		}
		m.held()
		m.watch()
		return nil
	}
	for {
		ok, err := m.TryLock(ctx)
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return errors.Join(watchdog.ErrNotObtained, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// TryLock tries once.
func (m *subject) TryLock(ctx context.Context) (bool, error) {
	end := m.op()
	ok, err := m.inner.TryLock(m.holdCtx(ctx))
	end()
	if ok {
		m.held()
		m.watch()
	}
	return ok, err
}

// held closes the gate, if any, for a hold just taken. (A watchdog that
// renews before its lock's TryLock returns renews ungated once.)
func (m *subject) held() {
	if m.gate != nil {
		m.gate.hold()
	}
}

// Unlock releases the lock. A watchdog's "not held" error also carries
// the cause of the loss, whose wording depends on which of two timers
// fired first after a pause; the timeline names it by its sentinel alone,
// so Unlock keeps only that (the message is kept as text).
func (m *subject) Unlock(ctx context.Context) error {
	if m.gate != nil {
		m.gate.release() // a watchdog held at the gate must see Unlock's stop
	}
	defer m.op()()
	m.mu.Lock()
	if m.hold != nil {
		close(m.hold)
		m.hold = nil
	}
	m.mu.Unlock()
	err := m.inner.Unlock(ctx)
	if errors.Is(err, watchdog.ErrNotHeld) {
		return fmt.Errorf("%w (%v)", watchdog.ErrNotHeld, err)
	}
	return err
}

// Token returns the lock's token, if it has one.
func (m *subject) Token() string {
	if t, ok := m.inner.(interface{ Token() string }); ok {
		return t.Token()
	}
	return ""
}

// Done returns the lock's Done channel, or nil if the lock has none: a
// job that selects on it then never hears of a lost lock.
func (m *subject) Done() <-chan struct{} {
	if d, ok := m.inner.(interface{ Done() <-chan struct{} }); ok {
		return d.Done()
	}
	return nil
}

// watch starts, for a hold just taken, a goroutine that narrates the
// moment the lock closes Done without being unlocked. It exits when Done
// closes or Unlock ends the hold.
func (m *subject) watch() {
	done := m.Done()
	if done == nil {
		return
	}
	end := make(chan struct{})
	m.mu.Lock()
	if m.hold != nil {
		close(m.hold)
	}
	m.hold = end
	m.mu.Unlock()
	go func() {
		select {
		case <-done:
		case <-end:
			return
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		select {
		case <-end:
			return // closed by Unlock: not news
		default:
		}
		if m.note != nil {
			m.note("Done closed: the lock is lost")
		}
	}()
}

// renewed is told by spyClient about each PEXPIRE: the key's value just
// before it, and the reply. The first one sent while the key held
// someone else's token is narrated.
func (m *subject) renewed(key string, ttl time.Duration, holder string, ok bool) {
	if holder == "" || holder == m.Token() {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.note == nil || m.told {
		return
	}
	m.told = true
	reply := 0
	if ok {
		reply = 1
	}
	m.note("watchdog renews: PEXPIRE %s %d → %d, but the key holds %s", key, ttl.Milliseconds(), reply, holder)
}

// spyClient is a Redis client that reports every PEXPIRE to its subject,
// with what the key held just before it. It changes nothing: the GET is
// an extra read, and the PEXPIRE is sent as the lock sent it.
type spyClient struct {
	*redis.Client
	subject *subject
}

// PExpire sends PEXPIRE and reports it.
func (c *spyClient) PExpire(ctx context.Context, key string, ttl time.Duration) *redis.BoolCmd {
	holder, err := c.Client.Get(context.WithValue(ctx, spyKey{}, true), key).Result()
	cmd := c.Client.PExpire(ctx, key, ttl)
	if err == nil && cmd.Err() == nil {
		c.subject.renewed(key, ttl, holder, cmd.Val())
	}
	return cmd
}

// narrate makes a client narrate, in its own lane, what its lock does in
// the background (see subject).
var narrate = labs.RegisterOp("narrate", func(_ context.Context, l *labs.Local, _ string) (string, error) {
	m, ok := l.Locker.(*subject)
	if !ok {
		return "", fmt.Errorf("client %s: lock %T is not a lab 05 subject", l.Name, l.Locker)
	}
	m.mu.Lock()
	m.note = l.Note
	m.mu.Unlock()
	return "", nil
})

// done returns the Done channel of a client's lock, or nil.
func done(l *labs.Local) <-chan struct{} {
	if d, ok := l.Locker.(interface{ Done() <-chan struct{} }); ok {
		return d.Done()
	}
	return nil
}

var (
	// work is a step of the job done under the lock: it takes as long as
	// its argument says, watching Done all along, as a job run under a
	// watchdog should. If Done closes, it stops at once, says so, and
	// returns "lost"; otherwise it records nothing and returns "done".
	work = labs.RegisterOp("work", func(ctx context.Context, l *labs.Local, arg string) (string, error) {
		d, err := time.ParseDuration(arg)
		if err != nil {
			return "", fmt.Errorf("work %q: %w", arg, err)
		}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return "done", nil
		case <-done(l):
			l.Note("Done is closed: stops the job before its write")
			return "lost", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})

	// ship is the job's last step, its one effect: unless Done is closed,
	// the client enters the critical section, writes its argument to the
	// protected resource (the order) and leaves. The critical section is
	// the write, so that a holder that learns in time that its lock is
	// lost stays out of it.
	ship = labs.RegisterOp("ship", func(_ context.Context, l *labs.Local, arg string) (string, error) {
		select {
		case <-done(l):
			l.Note("Done is closed: does not write (%s)", arg)
			return "skipped", nil
		default:
		}
		l.Enter()
		l.Write(arg, true)
		l.Exit()
		return "shipped", nil
	})
)

// waitUntil polls cond every millisecond for at most d. If cond never
// holds, it notes silence (a format for d) in the faults lane and returns:
// what follows on the timeline shows the consequence.
func waitUntil(s *labs.Scene, d time.Duration, silence string, cond func() bool) {
	ctx, cancel := context.WithTimeout(s.Ctx, d)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			s.Note(silence, d)
			return
		case <-time.After(time.Millisecond):
		}
	}
}
