package lab05_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/labs"
)

// The watchdog, explored. A watchdog renews on its own timer, in the
// background, where the explorer cannot take turns. A gated client (the
// Param gated=on) holds its watchdog before the first Redis command of
// each renewal round until the scenario grants it one round (the op
// renew), so that each renewal is a turn of the schedule: the explorer
// orders it against the lease running out, the other client's steps and
// the holder's write. Within a round, the watchdog parks before its
// second and later commands ([labs.Command]), so that the explorer also
// reaches between an owner check and a renewal sent as two commands.

// gatedParam turns the gate on for one client.
const gatedParam = "gated"

// gate holds a client's background commands (those sent while none of its
// lock's operations runs: its watchdog's) in rounds. A round starts at a
// grant and ends after a command that is not a plain read (the renewal),
// so that the watchdog's next command, a tick later, waits at the gate
// for the next grant.
type gate struct {
	hook func(context.Context, string) // the step controller's: parks at Command points

	mu      sync.Mutex    // protects the fields below
	open    bool          // no hold, or Unlock under way: every command passes
	waiting bool          // the watchdog is held before a round's first command
	granted bool          // a round was granted and not yet taken up
	n       int           // commands of the round under way; 0 between rounds
	changed chan struct{} // closed and replaced whenever a field changes
}

func newGate(hook func(context.Context, string)) *gate {
	return &gate{hook: hook, open: true, changed: make(chan struct{})}
}

// signal wakes whoever waits on a change; g.mu must be held.
func (g *gate) signal() {
	close(g.changed)
	g.changed = make(chan struct{})
}

// hold closes the gate for a new hold: its watchdog's first command waits
// for a grant.
func (g *gate) hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open, g.waiting, g.granted, g.n = false, false, false, 0
	g.signal()
}

// release opens the gate for good (Unlock, or the client stops): a
// watchdog held at it goes on, so that it sees Unlock's stop.
func (g *gate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open = true
	g.signal()
}

// before is called before each background command.
func (g *gate) before(ctx context.Context) {
	g.mu.Lock()
	if g.open {
		g.mu.Unlock()
		return
	}
	if g.n > 0 { // a later command of the round: the explorer may park it
		g.n++
		k := g.n
		g.mu.Unlock()
		g.hook(ctx, labs.Command(k))
		return
	}
	g.waiting = true
	g.signal()
	for !g.granted && !g.open {
		ch := g.changed
		g.mu.Unlock()
		<-ch
		g.mu.Lock()
	}
	g.waiting = false
	if g.granted {
		g.granted, g.n = false, 1
	}
	g.signal()
	g.mu.Unlock()
}

// after is called after each background command: a command that is not a
// plain read ends the round (a NOSCRIPT from EVALSHA does not: the script
// follows).
func (g *gate) after(name string, err error) {
	if reads[name] || (strings.HasPrefix(name, "evalsha") && err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT")) {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n > 0 {
		g.n = 0
		g.signal()
	}
}

// reads are the commands that read the key without renewing it.
var reads = map[string]bool{"get": true, "exists": true, "pttl": true, "ttl": true, "type": true, "strlen": true, "expiretime": true, "pexpiretime": true}

// await waits until cond holds (true), done is closed or d has passed
// (false).
func (g *gate) await(ctx context.Context, done <-chan struct{}, d time.Duration, cond func() bool) (bool, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		g.mu.Lock()
		ok, ch := cond(), g.changed
		g.mu.Unlock()
		if ok {
			return true, nil
		}
		select {
		case <-ch:
		case <-done:
			return false, nil
		case <-t.C:
			return false, errTooQuiet
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

// errTooQuiet: the watchdog neither came to the gate nor stopped.
var errTooQuiet = errors.New("quiet")

// roundBound is how long renew waits for the watchdog: its next tick is a
// third of the explored lease away, at most.
const roundBound = 2 * time.Second

// round grants one renewal round and returns when it is over: the
// watchdog waits at the gate again ("renewed"), or it has stopped, Done
// closed ("stopped").
func (g *gate) round(ctx context.Context, done <-chan struct{}) (string, error) {
	if ok, err := g.await(ctx, done, roundBound, func() bool { return g.waiting }); err != nil || !ok {
		return stoppedOr(err)
	}
	g.mu.Lock()
	g.granted = true
	g.signal()
	g.mu.Unlock()
	if _, err := g.await(ctx, nil, roundBound, func() bool { return !g.granted }); err != nil {
		return "", err
	}
	if ok, err := g.await(ctx, done, roundBound, func() bool { return g.waiting }); err != nil || !ok {
		return stoppedOr(err)
	}
	return "renewed", nil
}

func stoppedOr(err error) (string, error) {
	if errors.Is(err, errTooQuiet) {
		return "", fmt.Errorf("its watchdog neither renewed again nor closed Done within %v", roundBound)
	}
	if err != nil {
		return "", err
	}
	return "stopped", nil
}

// gateHook is the go-redis hook of a gated client's pool.
type gateHook struct{ m *subject }

func (h gateHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h gateHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !h.m.background(ctx) {
			return next(ctx, cmd)
		}
		h.m.gate.before(ctx)
		err := next(ctx, cmd)
		h.m.gate.after(cmd.Name(), err)
		return err
	}
}

func (h gateHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if !h.m.background(ctx) {
			return next(ctx, cmds)
		}
		h.m.gate.before(ctx)
		err := next(ctx, cmds)
		h.m.gate.after("pipeline", err)
		return err
	}
}

// spyKey marks the spy's own reads, which no gate holds.
type spyKey struct{}

// renew grants the client's watchdog one renewal round (see gate).
var renew = labs.RegisterOp("renew", func(ctx context.Context, l *labs.Local, _ string) (string, error) {
	m, ok := l.Locker.(*subject)
	if !ok || m.gate == nil {
		return "", fmt.Errorf("client %s: its lock is not a gated lab 05 subject (labs.Param(%q, \"on\"))", l.Name, gatedParam)
	}
	return m.gate.round(ctx, m.Done())
})
