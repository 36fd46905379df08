package faults

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/locklab/locklab/bench/env"
	"github.com/locklab/locklab/bench/registry"
	"github.com/locklab/locklab/internal/history"
	"github.com/locklab/locklab/internal/preflight"
	"github.com/locklab/locklab/internal/rig"
	"github.com/redis/go-redis/v9"
)

// An actor is one client of one lock in one fault run, with its own
// connections: A, the holder the fault hits, and B and C, who want the
// lock while it does. Each is a careful user of its lock: it reads the
// protected resource, does its work, and before writing it checks what
// the lock lets it check (a loss signal, the lease by its own clock),
// and aborts the work, without writing, when the lock says it is lost.
// Everything it does is recorded on the run's history.
//
// The protected resource is a counter on the resource server, which no
// fault touches: each holder reads it and writes it back plus one. Locks
// that give fencing tokens write through a fenced store (the rule of
// fencing.Store: a write is applied only with a token larger than every
// token applied before); the others write plainly.

// actorSpec is what an actor is made from; it crosses to a child process
// as JSON.
type actorSpec struct {
	Name      string                `json:"name"` // "A", "B", "C"
	Impl      string                `json:"impl"`
	Key       string                `json:"key"`      // the lock key
	Res       string                `json:"res"`      // the resource's key
	ResAddr   string                `json:"res_addr"` // the resource server, as this client dials it
	Addrs     []string              `json:"addrs"`    // the lock servers, as this client dials them
	TTL       time.Duration         `json:"ttl"`
	Users     *registry.UserClients `json:"users"`
	ClockBase int64                 `json:"clock_base"`
	// Pipeliners: the lock's commands go through these AutoPipeliners,
	// shared with other actors of this process (registry.Env.Pipeliners);
	// never sent to a child process.
	Pipeliners []*redis.AutoPipeliner `json:"-"`
	// Probe: the lock's Redis servers as the harness dials them (no
	// proxy), read around a release that fails (effect.go); empty for a
	// lock on another system.
	Probe []string `json:"probe,omitempty"`
}

// actor is an actor in this process.
type actor struct {
	spec   actorSpec
	clock  history.Clock
	record func(history.Event)
	con    registry.Contender
	l      registry.Locker
	res    *redis.Client
	hook   func(ctx context.Context, point string)
	probe  []*redis.Client // the lock's servers, unproxied (effect.go)
	// before: where the holder's token was on the lock's servers, read
	// by exit for the next unlock; nil when not read.
	before map[string]bool

	read int64 // the value read in this hold

	mu       sync.Mutex
	told     chan struct{} // closed when the lock said it is lost (this hold)
	toldText string
	stop     chan struct{} // closed when this hold's release starts
	goOn     chan struct{} // closed by release: the fault is over, finish the work
}

// Timeouts of the resource's client, which never retries: longer than any
// latency a schedule adds.
const resourceTimeout = 15 * time.Second

// newActor connects an actor.
func newActor(spec actorSpec, clock history.Clock, record func(history.Event), hook func(context.Context, string)) (*actor, error) {
	im, ok := registry.Locks[spec.Impl]
	if !ok {
		return nil, fmt.Errorf("faults: no implementation %q", spec.Impl)
	}
	con, err := im.Connect(registry.Env{Addrs: spec.Addrs, TTL: spec.TTL, Users: spec.Users, Hook: hook, Pipeliners: spec.Pipeliners})
	if err != nil {
		return nil, fmt.Errorf("faults: %s client %s: %w", spec.Impl, spec.Name, err)
	}
	o := rig.ClientOptions(spec.ResAddr)
	o.ReadTimeout, o.WriteTimeout = resourceTimeout, resourceTimeout
	a := &actor{spec: spec, clock: clock, record: record, con: con, l: con.Locker(spec.Key),
		res: redis.NewClient(o), hook: hook, goOn: make(chan struct{}), probe: probeClients(spec.Probe)}
	return a, nil
}

func (a *actor) event(e history.Event) {
	e.Client = a.spec.Name
	if e.At == 0 {
		e.At = a.clock.Now()
	}
	a.record(e)
}

func (a *actor) note(format string, args ...any) {
	a.event(history.Event{Kind: history.Note, Text: fmt.Sprintf(format, args...)})
}

// warm takes and releases the lock once on another key, so connections
// are open and scripts loaded before the run; it is not recorded.
func (a *actor) warm(ctx context.Context, key string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	l := a.con.Locker(key)
	// The first Lock opens the connections, which on a loaded machine can
	// take longer than a short lease's per-node timeout (redlock's is 5%
	// of it): try a few times.
	var err error
	for range 40 {
		lctx, lcancel := context.WithTimeout(ctx, 3*time.Second)
		err = l.Lock(lctx)
		lcancel()
		if err == nil || refusesServer(err) || !env.SleepCtx(ctx, 50*time.Millisecond) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("warm-up Lock: %w", err)
	}
	// A release that fails leaves the warm-up key to expire: nothing else
	// uses it.
	_ = l.Unlock(ctx)
	return a.res.Ping(ctx).Err()
}

// lock waits up to bound for the lock, calling Lock again after each
// give-up or error, as a caller that must get the job done would. It
// reports whether it got the lock.
func (a *actor) lock(ctx context.Context, bound time.Duration) bool {
	a.event(history.Event{Kind: history.Want})
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	failed := 0
	var last error
	for {
		err := a.l.Lock(ctx)
		if err == nil {
			tok, fence := registry.Tokens(a.l)
			a.event(history.Event{Kind: history.Acquire, OK: true, Token: tok, Fence: fence})
			if failed > 0 {
				a.note("(after %d failed Lock calls; last: %s)", failed, shortErr(last))
			}
			a.watch()
			return true
		}
		if refusesServer(err) {
			a.event(history.Event{Kind: history.Acquire, Text: "refused: " + shortErr(err)})
			return false
		}
		failed++
		last = err
		if failed <= 3 {
			a.event(history.Event{Kind: history.Acquire, Text: shortErr(err) + " (retrying)"})
		} else if failed == 4 {
			a.note("(more failed Lock calls not shown)")
		}
		if ctx.Err() != nil {
			a.event(history.Event{Kind: history.Acquire, Text: fmt.Sprintf("gave up after %v and %d Lock calls: %s", bound, failed, shortErr(last))})
			return false
		}
		if !env.SleepCtx(ctx, 10*time.Millisecond) {
			a.event(history.Event{Kind: history.Acquire, Text: fmt.Sprintf("gave up after %v and %d Lock calls: %s", bound, failed, shortErr(last))})
			return false
		}
	}
}

// watch records the moment the lock says it is lost, for locks with a
// loss signal (watchdog's Done, Keep's lease, rueidislock's context).
func (a *actor) watch() {
	a.mu.Lock()
	a.told, a.stop, a.toldText = make(chan struct{}), make(chan struct{}), ""
	told, stop := a.told, a.stop
	a.mu.Unlock()
	lost, ok := registry.Lost(a.l)
	if !ok {
		return
	}
	if lost == nil {
		return
	}
	go func() {
		select {
		case <-lost:
			select {
			case <-stop: // our own Unlock ended it
				return
			default:
			}
			a.event(history.Event{Kind: history.Note, Text: "told: the lock is lost"})
			close(told)
		case <-stop:
		}
	}()
}

// isTold reports whether the lock said it is lost in this hold.
func (a *actor) isTold() bool {
	a.mu.Lock()
	told := a.told
	a.mu.Unlock()
	if told == nil {
		return false
	}
	select {
	case <-told:
		return true
	default:
		return false
	}
}

// begin is A's start: take the lock, enter, read the resource.
func (a *actor) begin(ctx context.Context, bound time.Duration) error {
	if !a.lock(ctx, bound) {
		return errors.New("did not get the lock")
	}
	a.event(history.Event{Kind: history.Enter})
	return a.readRes(ctx)
}

// finish is A's end: work until release (the fault is over) or until the
// lock says it is lost, then write (unless the lock said it is lost, or
// its lease ran out by its own clock), exit and unlock.
func (a *actor) finish(ctx context.Context) error {
	a.mu.Lock()
	told := a.told
	a.mu.Unlock()
	select {
	case <-a.goOn:
	case <-told:
	case <-ctx.Done():
		return ctx.Err()
	}
	a.writeRes(ctx)
	a.exit()
	a.unlock()
	return nil
}

// Release lets finish go on.
func (a *actor) Release() {
	select {
	case <-a.goOn:
	default:
		close(a.goOn)
	}
}

// cycle is B's and C's whole turn: take the lock (waiting up to bound),
// enter, read, write, hold for hold, exit, unlock. wrote, when not nil,
// is called once the write is done.
func (a *actor) cycle(ctx context.Context, bound, hold time.Duration, wrote func()) bool {
	if !a.lock(ctx, bound) {
		return false
	}
	a.event(history.Event{Kind: history.Enter})
	if err := a.readRes(ctx); err == nil {
		a.writeRes(ctx)
	}
	if wrote != nil {
		wrote()
	}
	if hold > 0 {
		select {
		case <-time.After(hold):
		case <-ctx.Done():
		}
	}
	a.exit()
	a.unlock()
	return true
}

func (a *actor) readRes(ctx context.Context) error {
	v, err := a.res.HGet(ctx, a.spec.Res, "v").Int64()
	if errors.Is(err, redis.Nil) {
		v, err = 0, nil
	}
	if err != nil {
		a.note("read failed: %s", shortErr(err))
		return err
	}
	a.read = v
	a.note("read %d", v)
	return nil
}

// writeRes writes read+1, unless the lock says it was lost.
func (a *actor) writeRes(ctx context.Context) {
	if a.isTold() {
		a.note("lock lost: abandons the work, no write")
		return
	}
	if u, ok := a.l.(interface{ Until() time.Time }); ok {
		if until := u.Until(); !until.IsZero() && !time.Now().Before(until) {
			a.note("lease over by its own clock (Until): no write")
			return
		}
	}
	tok, fence := registry.Tokens(a.l)
	v := a.read + 1
	var accepted bool
	var err error
	if fence > 0 {
		var n int64
		n, err = fencedWrite.Run(ctx, a.res, []string{a.spec.Res}, v, fence).Int64()
		accepted = n == 1
	} else {
		err = a.res.HSet(ctx, a.spec.Res, "v", v).Err()
		accepted = err == nil
	}
	e := history.Event{Kind: history.Write, OK: accepted, Token: tok, Fence: fence, Text: strconv.FormatInt(v, 10)}
	if err != nil {
		e.Text += " (failed: " + shortErr(err) + ")"
	} else if !accepted {
		e.Text += " (refused: stale token)"
	}
	a.event(e)
}

// exit leaves the critical section: it reads where the holder's token is
// on the lock's servers, for unlock to tell whether a failed release took
// effect, and records the exit. The read is inside the critical section,
// so that its time does not count as a stall.
func (a *actor) exit() {
	a.before = nil
	if tok, _ := registry.Tokens(a.l); tok != "" && len(a.probe) > 0 {
		a.before, _ = holding(context.Background(), a.probe, a.spec.Key, tok)
	}
	a.event(history.Event{Kind: history.Exit})
}

// unlock releases the lock and records the release; when the Unlock
// returns an error and exit read where the token was, it also records
// whether the release took effect (effect.go).
func (a *actor) unlock() {
	a.halt()
	tok, fence := registry.Tokens(a.l)
	before := a.before
	a.before = nil
	read := tok != "" && len(a.probe) > 0 && before != nil
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	err := a.l.Unlock(ctx)
	cancel()
	e := history.Event{Kind: history.Release, OK: err == nil, Token: tok, Fence: fence}
	if err != nil {
		e.Token, e.Fence, e.Text = "", 0, shortErr(err)
	}
	a.event(e)
	if err != nil && read {
		after, _ := holding(context.Background(), a.probe, a.spec.Key, tok)
		if text := releaseEffect(before, after, len(a.probe)); text != "" {
			a.note("%s", text)
		}
	}
}

// halt closes a.stop, once, when it is set.
func (a *actor) halt() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stop != nil {
		select {
		case <-a.stop:
		default:
			close(a.stop)
		}
	}
}

func (a *actor) Close() {
	a.Release()
	a.halt()
	if a.con.Close != nil {
		_ = a.con.Close()
	}
	_ = a.res.Close()
	for _, c := range a.probe {
		_ = c.Close()
	}
}

// fencedWrite is the fenced store's write: the rule of fencing.Store
// (UPDATE ... WHERE last_token < ?), on the resource server, so that a
// write can be delayed in the network like any other.
//
// KEYS[1] the resource (a hash: v, last); ARGV[1] the value; ARGV[2] the
// writer's fencing token. Returns 1 if applied, 0 if the token is not
// larger than the last applied one (nothing changed).
var fencedWrite = redis.NewScript(`
local last = tonumber(redis.call("HGET", KEYS[1], "last") or "0")
if tonumber(ARGV[2]) > last then
  redis.call("HSET", KEYS[1], "v", ARGV[1], "last", ARGV[2])
  return 1
end
return 0`)

// shortErr keeps an error's first line, up to 90 bytes, for a timeline.
func shortErr(err error) string { return firstLine(err, 90) }

// longErr keeps an error's first line, up to 400 bytes, for the reports.
func longErr(err error) string { return firstLine(err, 400) }

// firstLine returns the first line of err ("" for nil), cut to n bytes
// ending in "..." when it is longer.
func firstLine(err error, n int) string {
	if err == nil {
		return ""
	}
	s, _, _ := strings.Cut(err.Error(), "\n")
	if len(s) > n {
		s = s[:n-3] + "..."
	}
	return s
}

// refusesServer reports whether err is a lock refusing the server it was
// given (it evicts keys: internal/preflight; a pooler in statement pooling
// in front of PostgreSQL), which no retry changes. It also reads the error
// of a child process, which arrives as text.
func refusesServer(err error) bool {
	return err != nil && (errors.Is(err, preflight.ErrEviction) || strings.Contains(err.Error(), preflight.ErrEviction.Error()) ||
		strings.Contains(err.Error(), pglockRefusesPooler))
}

// pglockRefusesPooler is in the error of pglock's Lock behind a pooler in
// statement pooling, which it refuses (pglock has no sentinel for it).
const pglockRefusesPooler = "refuses the transaction the lock needs"
