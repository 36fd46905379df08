package labs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/locklab/locklab/internal/history"
)

// Local is one client where it runs: its lock, its environment and its
// recorder. Operations on it record events in the scene's history. A
// [Client] drives a Local from the scenario, in this process or in a child;
// [Scene.Local] hands one out directly, for stress loops in goroutines.
type Local struct {
	Name   string
	Env    *Env
	Locker Locker

	clock  history.Clock
	record func(history.Event)
	parked func(point string) // tells the driver the client parked

	mu    sync.Mutex      // protects armed, cont and holds
	armed map[string]bool // armed points; true: park without a timeline note
	cont  chan struct{}   // closed by Continue; nil when not parked
	holds int             // Locks and TryLocks that took the lock, less the Unlocks that returned nil
}

func newLocal(env *Env, impl *Impl, clock history.Clock, record func(history.Event), parked func(string)) *Local {
	l := &Local{Name: env.Client, Env: env, clock: clock, record: record, parked: parked, armed: map[string]bool{}}
	env.hook = l.hook
	l.Locker = impl.New(env)
	return l
}

// Record adds an event for this client, stamped now.
func (l *Local) Record(e history.Event) {
	e.Client = l.Name
	if e.At == 0 {
		e.At = l.clock.Now()
	}
	l.record(e)
}

// Note puts a line of text in this client's lane.
func (l *Local) Note(format string, args ...any) {
	l.Record(history.Event{Kind: history.Note, Text: fmt.Sprintf(format, args...)})
}

// Token returns the lock's random owner token, if it has one.
func (l *Local) Token() string {
	if t, ok := l.Locker.(tokener); ok {
		return t.Token()
	}
	return ""
}

// Fence returns the lock's fencing token, if it has one.
func (l *Local) Fence() uint64 {
	if f, ok := l.Locker.(fencer); ok {
		return f.Fence()
	}
	return 0
}

// Lock calls the lock's Lock and records what happened.
func (l *Local) Lock(ctx context.Context) error {
	l.Record(history.Event{Kind: history.Want})
	err := l.Locker.Lock(ctx)
	l.recordAcquire(err == nil, err)
	if err == nil {
		l.countHold(1)
	}
	return err
}

// TryLock calls the lock's TryLock and records what happened.
func (l *Local) TryLock(ctx context.Context) (bool, error) {
	ok, err := l.Locker.TryLock(ctx)
	if err == nil && !ok {
		l.Record(history.Event{Kind: history.Acquire, Text: "(taken by someone else)"})
		return false, nil
	}
	l.recordAcquire(ok, err)
	if ok && err == nil {
		l.countHold(1)
	}
	return ok, err
}

func (l *Local) recordAcquire(ok bool, err error) {
	e := history.Event{Kind: history.Acquire, OK: ok}
	if ok {
		e.Token, e.Fence = l.Token(), l.Fence()
	} else if err != nil {
		e.Text = describeErr(err)
	}
	l.Record(e)
}

// Unlock calls the lock's Unlock and records what happened.
func (l *Local) Unlock(ctx context.Context) error {
	tok, fence := l.Token(), l.Fence()
	err := l.Locker.Unlock(ctx)
	if err == nil {
		l.countHold(-1)
	}
	e := history.Event{Kind: history.Release, OK: err == nil, Token: tok, Fence: fence}
	if err != nil {
		e.Token, e.Fence, e.Text = "", 0, describeErr(err)
	}
	l.Record(e)
	return err
}

// countHold adds d to the holds the client's lock was told it has.
func (l *Local) countHold(d int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.holds = max(l.holds+d, 0)
}

// releaseTimeout bounds each Unlock of [Local.releaseHeld].
const releaseTimeout = 2 * time.Second

// releaseHeld unlocks, off the timeline, every hold the client's lock
// still has by its own answers (a Lock that returned nil or a TryLock that
// returned true, not yet matched by an Unlock that returned nil), each
// Unlock bounded by releaseTimeout, and stops at the first that fails.
// It is what the end of a process does for a client that runs in this
// one: a hold the lock keeps in this process's memory (a lab 00 mutex)
// would otherwise outlive the test and block the next test's clients.
// Its errors are dropped: the test that made the hold has been judged.
func (l *Local) releaseHeld() {
	for {
		l.mu.Lock()
		n := l.holds
		l.mu.Unlock()
		if n == 0 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
		err := l.Locker.Unlock(ctx)
		cancel()
		if err != nil {
			return
		}
		l.countHold(-1)
	}
}

// Enter records that the client entered the critical section.
func (l *Local) Enter() { l.Record(history.Event{Kind: history.Enter}) }

// Exit records that the client left the critical section.
func (l *Local) Exit() { l.Record(history.Event{Kind: history.Exit}) }

// Write records a write to the protected resource carrying the lock's
// tokens, accepted or not.
func (l *Local) Write(data string, accepted bool) {
	l.Record(history.Event{Kind: history.Write, OK: accepted, Text: data, Token: l.Token(), Fence: l.Fence()})
}

// Answer records on l's lane the write of data whose result was err, and
// returns what a write op answers the scenario: "accepted" when err is
// nil, "refused" when err is one of refused (errors.Is), the resource's
// refusal. For any other error ok is false: the write failed, and the op
// should fail with err.
func (l *Local) Answer(data string, err error, refused ...error) (answer string, ok bool) {
	if err == nil {
		l.Write(data, true)
		return "accepted", true
	}
	for _, r := range refused {
		if errors.Is(err, r) {
			l.Write(data, false)
			return "refused", true
		}
	}
	return "", false
}

// builtinOps are the operations every client understands.
var builtinOps = map[string]bool{
	"lock": true, "trylock": true, "unlock": true, "enter": true, "exit": true, "write": true, "note": true,
}

// Do runs the operation op with arg: a built-in (lock, trylock, unlock,
// enter, exit, write, note) or one registered with [RegisterOp]. "lock"
// takes an optional duration: the longest the client waits.
func (l *Local) Do(ctx context.Context, op, arg string) (string, error) {
	ctx = countCommands(ctx)
	switch op {
	case "lock":
		if arg != "" { // "lock" with a duration: wait at most that long
			d, err := time.ParseDuration(arg)
			if err != nil {
				return "", fmt.Errorf("labs: lock %q: %w", arg, err)
			}
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, d)
			defer cancel()
		}
		return "", l.Lock(ctx)
	case "trylock":
		ok, err := l.TryLock(ctx)
		return strconv.FormatBool(ok), err
	case "unlock":
		return "", l.Unlock(ctx)
	case "enter":
		l.Enter()
		return "", nil
	case "exit":
		l.Exit()
		return "", nil
	case "write":
		l.Write(arg, true)
		return "", nil
	case "note":
		l.Note("%s", arg)
		return "", nil
	}
	fn, ok := lookupOp(op)
	if !ok {
		return "", fmt.Errorf("labs: client %s: no operation %q (RegisterOp it)", l.Name, op)
	}
	return fn(ctx, l, arg)
}

// arm makes the client park the next time its lock reaches point; a
// silent park leaves no note on the timeline.
func (l *Local) arm(point string, silent bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.armed[point] = silent
}

// disarm undoes arm: the client passes point without parking.
func (l *Local) disarm(point string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.armed, point)
}

// hook is the lock's hook: it parks the client at an armed point until the
// scenario says Continue (or the operation's context ends).
func (l *Local) hook(ctx context.Context, point string) {
	l.mu.Lock()
	silent, ok := l.armed[point]
	if !ok {
		l.mu.Unlock()
		return
	}
	delete(l.armed, point)
	cont := make(chan struct{})
	l.cont = cont
	l.mu.Unlock()
	if !silent {
		l.Record(history.Event{Kind: history.Note, Text: "⏸ " + pointName(point)})
	}
	l.parked(point)
	select {
	case <-cont:
	case <-ctx.Done():
	}
}

// resume lets a parked client go on.
func (l *Local) resume() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cont != nil {
		close(l.cont)
		l.cont = nil
	}
}

// crash closes the client's Redis connections and then lets a parked
// client go on, so that what its lock was about to send never reaches
// Redis, as when its process dies: its commands fail on closed clients.
func (l *Local) crash() {
	l.Env.close()
	l.resume()
}

// Close closes the client's Redis connections.
func (l *Local) Close() {
	l.resume()
	l.Env.close()
}

// pointName is how the timeline names a hook point: its name, or for a
// [Command] point "before Redis command n".
func pointName(point string) string {
	if n, ok := strings.CutPrefix(point, "redis#"); ok {
		return "before Redis command " + n
	}
	return point
}
