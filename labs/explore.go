package labs

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/history"
)

// Exploration: a lesson's race run under many orderings of its clients'
// steps, instead of the one ordering its scenario forces. The explorer
// lets one actor move at a time: a client runs until it parks at one of
// the race's hook points or its operation returns, an event (a lease that
// runs out) happens at once. Which actor moves next is the schedule: every
// ordering, searched depth first, where there are few enough (DSLabs'
// search tests), or a seeded random sample of them (6.5840's repeated
// randomized runs). Each schedule runs on a fresh scene on the same
// servers, flushed between schedules, and is replayed by its id alone:
//
//	LOCKLAB_SCHEDULE=<id> go test -run '^TestLabNN_...$' ./labs/NN-...
//
// The id is the seed of a sampled schedule, or the turns of a searched one
// ("A.B.B.A"), and a failing schedule prints the command with its id.

// scheduleEnv names the one schedule to replay.
const scheduleEnv = "LOCKLAB_SCHEDULE"

// A Race is a lesson's scenario for exploration: the actors whose steps
// the explorer orders, and where their clients park.
type Race struct {
	// Actors starts the clients and events of one schedule, in a fixed
	// order (the order is part of the schedule's id).
	Actors func(s *Scene, impl *Impl) []*Actor
	// Points are the named hook points where each client parks during its
	// lock operations (lock, trylock, unlock), whichever lock has them.
	Points []string
	// Commands, when above 1, parks clients also before their Redis
	// commands 2..Commands of a lock operation ([Command]), so that the
	// exploration reaches between any two commands of any code. (Before
	// the first is where the operation starts: a turn of its own.)
	Commands int
	// Ops are the operations that park at Points and Commands: lock,
	// trylock and unlock if nil. (A lab whose exercise is not a lock
	// names its own: "deliver".)
	Ops []string
	// Final, if set, checks the end of each schedule (what Redis holds,
	// how the actors' parts ended: [Actor.Err]), recording violations
	// with [Scene.Violation].
	Final func(s *Scene, actors []*Actor)
	// Nodes is how many independent redis-server nodes the race runs on
	// ([Scene.Nodes]); 1 if 0. Every node is flushed between schedules.
	Nodes int
}

// An Actor is one party to a race: a client and its steps, or an event.
type Actor struct {
	name   string
	client *Client
	steps  [][]op      // each step: operations run back to back
	ready  func() bool // an event's, or a client's before its first step
	do     func()
	err    error // what ended the part, if an operation failed
	steady bool  // its operations never park (see Unparked)
	ended  int   // the turn that ended the part (1 for the first), 0 before

	step int   // next step
	op   int   // next operation in it
	call *Call // in flight: parked at a hook point
	at   string
	done bool
}

type op struct{ name, arg string }

// Actor makes c an actor of a race with steps, each one or more
// operations joined by "+" ("exit+unlock"), an operation its name and an
// optional argument after a space ("write x"). Operations of one step run
// back to back, except where an operation parks at a hook point (see
// [Race.Ops]). A trylock that answers false ends the actor's part, and so
// does an operation that fails, but for "not held" from an unlock, an
// answer: [Actor.Err] returns its error. (A failed enter, exit, write or
// note fails the test.)
func (s *Scene) Actor(c *Client, steps ...string) *Actor {
	a := &Actor{name: c.Name(), client: c}
	for _, st := range steps {
		var ops []op
		for _, o := range strings.Split(st, "+") {
			name, arg, _ := strings.Cut(strings.TrimSpace(o), " ")
			ops = append(ops, op{name, arg})
		}
		a.steps = append(a.steps, ops)
	}
	return a
}

// Event makes an actor of one thing done to the system (a lease that runs
// out), named name in schedules (one word: it is part of a replay
// command), which the explorer may order anywhere once ready reports true
// (ready may be nil: always). It happens at most once; an event never
// ready by the end does not happen.
func (s *Scene) Event(name string, ready func() bool, do func()) *Actor {
	return &Actor{name: name, ready: ready, do: do}
}

// When makes a client's actor wait, before its first step, until ready
// reports true (B acts only while A holds the lock, say); one never ready
// by the end does nothing.
func (a *Actor) When(ready func() bool) *Actor {
	a.ready = ready
	return a
}

// Unparked makes a client's actor run its operations without parking at
// the race's points: a bystander (the client that tries once while the
// other is stopped) whose own steps need no interleaving, so that the
// schedules are the orderings that matter.
func (a *Actor) Unparked() *Actor {
	a.steady = true
	return a
}

// Ended returns the turn (1 for a schedule's first) in which a's part
// ended, or 0 if it has not: which of two parts ended first.
func (a *Actor) Ended() int { return a.ended }

// Next returns the name of the operation a runs next, or is parked in
// ("renew"), or "" once its part has ended or for an event: an event
// that may happen only before a given step of a client uses it.
func (a *Actor) Next() string {
	if a.client == nil || a.done || a.step >= len(a.steps) {
		return ""
	}
	return a.steps[a.step][a.op].name
}

// At returns the hook point where a's client is parked, or "" when it is
// not parked: between its steps, or done.
func (a *Actor) At() string {
	if a.call == nil {
		return ""
	}
	return a.at
}

// Err returns the error of the operation that ended a's part, or nil.
// "Not held" from an unlock, and a trylock's false, end nothing.
func (a *Actor) Err() error { return a.err }

// enabled reports whether the actor can move.
func (a *Actor) enabled() bool {
	if a.done {
		return false
	}
	if a.ready != nil && (a.client == nil || (a.step == 0 && a.op == 0 && a.call == nil)) {
		return a.ready()
	}
	return true
}

// isLockOp reports whether name is one of the lock's operations.
func isLockOp(name string) bool { return name == "lock" || name == "trylock" || name == "unlock" }

// parks reports whether operation name parks at the race's points.
func (r Race) parks(name string) bool {
	if r.Ops == nil {
		return isLockOp(name)
	}
	return slices.Contains(r.Ops, name)
}

// points are where a race parks a client.
func (r Race) points() []string {
	ps := append([]string(nil), r.Points...)
	for k := 2; k <= r.Commands; k++ {
		ps = append(ps, Command(k))
	}
	return ps
}

// move runs one step of a: an event, or a client until it parks or the
// step's operations have returned.
func (a *Actor) move(s *Scene, race Race, points []string) {
	s.t.Helper()
	if a.client == nil {
		a.do()
		a.done = true
		return
	}
	c := a.client
	if a.call != nil { // parked: arm the point again (a loop may reach it again) and go on
		c.ParkAt(a.at)
		c.Continue()
	}
	for {
		if a.call == nil {
			o := a.steps[a.step][a.op]
			if race.parks(o.name) && !a.steady {
				c.ParkAt(points...)
			}
			a.call = c.Go(o.name, o.arg)
		}
		o := a.steps[a.step][a.op]
		if race.parks(o.name) && !a.steady {
			if at, parked := c.WaitParkedOr(a.call, points...); parked {
				a.at = at
				return
			}
			c.disarm(points...)
		}
		out, err := a.call.Result()
		a.call = nil
		switch {
		case err != nil && isLockOp(o.name) && NotHeld(err):
		case err != nil && builtinOps[o.name] && !isLockOp(o.name):
			s.Fatalf("labs: %s's %s: %v", a.name, o.name, err)
		case err != nil: // the lock's, or the lab's operation's: an answer, for Final to judge
			s.Note("%s's %s failed: %v", a.name, o.name, err)
			a.err, a.done = err, true
			return
		case o.name == "trylock" && out != "true":
			a.done = true
			return
		}
		a.op++
		if a.op == len(a.steps[a.step]) {
			a.step, a.op = a.step+1, 0
			a.done = a.step == len(a.steps)
			return
		}
	}
}

// ExploreOpts bound an exploration.
type ExploreOpts struct {
	// Budget is the most schedules run; 200 if 0.
	Budget int
	// Exhaustive searches every ordering, depth first, and fails if there
	// are more than Budget. Otherwise the explorer searches depth first
	// for half the budget (the orders closest to the actors' own order,
	// each varied from the end) and, if the search has not ended, runs a
	// seeded random sample for the other half (every choice uniform among
	// the actors that can move).
	Exhaustive bool
	// MaxTime stops a sampled exploration early (never an exhaustive
	// search) once the schedules have run this long; 8s if 0, so that an
	// exercise test stays within 20s on a loaded machine. The number run
	// is printed.
	MaxTime time.Duration
}

// ExploreBroken explores race against a broken lock and passes when at
// least one schedule shows a violation; none is "harness went blind".
func ExploreBroken(t *testing.T, title string, race Race, impl *Impl, o ExploreOpts) {
	t.Helper()
	explore(t, title, "broken, explored", race, impl, wantViolation, o, runOpts{})
}

// ExploreFixed explores race against a correct lock and passes when every
// schedule is safe.
func ExploreFixed(t *testing.T, title string, race Race, impl *Impl, o ExploreOpts) {
	t.Helper()
	explore(t, title, "fixed, explored", race, impl, wantSafe, o, runOpts{})
}

// ExploreExercise explores race against the learner's exercise, as
// [Exercise] runs a scenario: built with -tags exercise every schedule
// must be safe; otherwise an untouched exercise.go must be caught in at
// least one, and an edited one skips.
func ExploreExercise(t *testing.T, title string, race Race, impl *Impl, o ExploreOpts) {
	t.Helper()
	ro := runOpts{spread: true, exercise: true}
	if exerciseMode {
		explore(t, title, "exercise, explored", race, impl, wantSafe, o, ro)
		return
	}
	if !exercisePristine(t) {
		t.Skipf("exercise.go has been edited: test your fix with `make exercise LAB=%s` (go test -tags exercise); `make progress` shows every lab", labNumber())
	}
	explore(t, title, "exercise, untouched, explored: must be caught", race, impl, wantViolation, o, ro)
}

// scheduleTB is a test as one schedule's scene sees it: its cleanups (the
// clients' ends) run when the schedule ends, not when the test does.
type scheduleTB struct {
	testing.TB
	mu       sync.Mutex
	cleanups []func()
}

func (st *scheduleTB) Cleanup(f func()) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.cleanups = append(st.cleanups, f)
}

func (st *scheduleTB) end() {
	st.mu.Lock()
	fs := st.cleanups
	st.cleanups = nil
	st.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

// schedule chooses which enabled actor moves at each turn: by a replayed
// list of turns, a depth-first prefix, or a seeded random source.
type schedule struct {
	turns  []string   // replay: actor names in order
	prefix []int      // search: choices to make first, then 0
	rnd    *rand.Rand // sample
	// What happened: the choice and the number of choices at each turn,
	// and the actors' names.
	path, widths []int
	names        []string
}

// pick returns the index into enabled of the actor that moves.
func (sc *schedule) pick(s *Scene, enabled []*Actor) int {
	s.t.Helper()
	n := len(sc.path)
	i := 0
	switch {
	case sc.turns != nil:
		if n >= len(sc.turns) {
			break // past the turns given, the first that can move, as the search does
		}
		i = -1
		for j, a := range enabled {
			if a.name == sc.turns[n] {
				i = j
			}
		}
		if i < 0 {
			s.Fatalf("labs: schedule replay: turn %d is %s's, who cannot move now", n+1, sc.turns[n])
		}
	case n < len(sc.prefix):
		i = sc.prefix[n]
		if i >= len(enabled) {
			// The run did not repeat itself: a race on real time (a
			// lease, a node's timeout) came out otherwise on a loaded
			// machine. The search goes on from what did happen.
			s.t.Logf("labs: exploration: turn %d had %d choices, now %d (a timing came out otherwise): the search goes on from here", n+1, i+1, len(enabled))
			i = len(enabled) - 1
		}
	case sc.rnd != nil:
		i = sc.rnd.IntN(len(enabled))
	}
	sc.path = append(sc.path, i)
	sc.widths = append(sc.widths, len(enabled))
	sc.names = append(sc.names, enabled[i].name)
	return i
}

// next is the depth-first successor of the run that went down path with
// widths, or false when the search is over.
func next(path, widths []int) ([]int, bool) {
	for j := len(path) - 1; j >= 0; j-- {
		if path[j]+1 < widths[j] {
			return append(append([]int(nil), path[:j]...), path[j]+1), true
		}
	}
	return nil, false
}

// maxTurns bounds one schedule: no race here has this many steps, so a
// schedule that takes more is a client that loops at a hook point.
const maxTurns = 200

// explore runs race under schedules, each on a fresh scene over one set
// of servers, and judges them as [run] judges one scenario.
func explore(t *testing.T, title, label string, race Race, impl *Impl, want outcome, o ExploreOpts, ro runOpts) {
	t.Helper()
	if o.Budget == 0 {
		o.Budget = 200
	}
	if o.MaxTime == 0 {
		o.MaxTime = 8 * time.Second
	}
	start := time.Now()
	base := newScene(t, 10*checkTimeout) // its context serves FLUSHALL between schedules
	base.exercise = ro.exercise
	nodes := base.Nodes(max(race.Nodes, 1))
	observer := base.Redis()
	flushers := []*redis.Client{observer}
	for _, n := range nodes[1:] {
		c := n.Client()
		defer c.Close()
		flushers = append(flushers, c)
	}
	points := race.points()
	head := title + " " + label + ": "

	// runOne runs one schedule and returns its scene's events and findings.
	runOne := func(sc *schedule, id func() string) ([]history.Event, []history.Finding, *schedule) {
		st := &scheduleTB{TB: t}
		defer st.end()
		defer func() {
			if t.Failed() {
				t.Logf("%sschedule %s failed; replay it with\n\t%s", head, id(), replayCommand(t, id()))
			}
		}()
		// Every schedule starts from the same server: no keys, and no
		// cached scripts (an EVALSHA that found its script would send one
		// command fewer than the first schedule's).
		for _, c := range flushers {
			if err := c.FlushAll(base.Ctx).Err(); err != nil {
				t.Fatalf("labs: exploration: FLUSHALL between schedules: %v", err)
			}
			if err := c.ScriptFlush(base.Ctx).Err(); err != nil {
				t.Fatalf("labs: exploration: SCRIPT FLUSH between schedules: %v", err)
			}
		}
		s := newScene(st, exerciseTimeout)
		s.spread, s.exercise = ro.spread, ro.exercise
		s.nodes, s.observer = base.nodes, observer
		actors := race.Actors(s, impl)
		for {
			var enabled []*Actor
			for _, a := range actors {
				if a.enabled() {
					enabled = append(enabled, a)
				}
			}
			if len(enabled) == 0 {
				break
			}
			if len(sc.path) == maxTurns {
				s.Fatalf("labs: exploration: schedule ran %d turns: a client loops at a hook point", maxTurns)
			}
			mover := enabled[sc.pick(s, enabled)]
			mover.move(s, race, points)
			if mover.done && mover.ended == 0 {
				mover.ended = len(sc.path)
			}
		}
		if race.Final != nil {
			race.Final(s, actors)
		}
		events := s.hist.Events()
		return events, history.Check(events), sc
	}

	// A first run, not judged, warms what a lock keeps in the process
	// (what it learned of the server on first use), so that every
	// schedule, and its replay, meets the same process.
	runOne(&schedule{}, func() string { return "warm-up" })

	if id := os.Getenv(scheduleEnv); id != "" {
		sc := parseSchedule(id)
		events, findings, _ := runOne(sc, func() string { return id })
		timeline := history.Render(events, findings)
		fmt.Printf("%sschedule %s replayed: %s  %4.1fs\n", head, id, plural(len(findings), "violation"), time.Since(start).Seconds())
		t.Logf("schedule %s (turns %s)\n%s", id, strings.Join(sc.names, "."), timeline)
		if (want == wantSafe) != (len(findings) == 0) {
			t.Fatalf("%sschedule %s: %s", head, id, plural(len(findings), "violation"))
		}
		return
	}

	seed0 := seedOf(t.Name())
	runs, searched, how := 0, 0, ""
	var prefix []int
	searching := true // depth first until the search ends or has had its share
	for {
		var sc *schedule
		var id func() string
		if searching {
			sc = &schedule{prefix: prefix}
			id = func() string { return strings.Join(sc.names, ".") }
		} else {
			seed := seed0 + uint64(runs-searched)
			sc = &schedule{rnd: rand.New(rand.NewPCG(seed, 0))}
			id = func() string { return strconv.FormatUint(seed, 10) }
		}
		events, findings, sc := runOne(sc, id)
		runs++
		if os.Getenv("LOCKLAB_EXPLORE_DEBUG") != "" { // every schedule's turns, choices and widths
			t.Logf("schedule %d: %v %v %v %v", runs, sc.names, sc.path, sc.widths, time.Since(start))
		}
		if len(findings) > 0 {
			timeline := history.Render(events, findings)
			stats := fmt.Sprintf("%4.1fs  schedule %d", time.Since(start).Seconds(), runs)
			if want == wantSafe {
				fmt.Printf("%s%s ... FAIL  %s\n", head, plural(len(findings), "violation"), stats)
				t.Fatalf("%s%s in schedule %d (turns %s); replay it with\n\t%s\n%s", head, plural(len(findings), "violation"), runs, strings.Join(sc.names, "."), replayCommand(t, id()), timeline)
			}
			fmt.Printf("%sviolation reproduced in schedule %d ... ok  %s\n", head, runs, stats)
			t.Logf("%sviolation reproduced in schedule %d (turns %s); replay it with\n\t%s\n%s", head, runs, strings.Join(sc.names, "."), replayCommand(t, id()), timeline)
			return
		}
		if searching {
			searched++
			var more bool
			prefix, more = next(sc.path, sc.widths)
			switch {
			case !more:
				how = "every ordering"
			case o.Exhaustive && runs == o.Budget:
				t.Fatalf("%sthe race has more than %d orderings: sample it (Exhaustive: false) or raise the budget", head, o.Budget)
			case !o.Exhaustive && time.Since(start) > o.MaxTime:
				more, how = false, fmt.Sprintf("%d depth first, stopped at the %v cap", searched, o.MaxTime)
			case !o.Exhaustive && runs == o.Budget/2:
				searching = false // the other half: a seeded sample
			}
			if !more {
				break
			}
			continue
		}
		sampled := runs - searched
		if runs == o.Budget || time.Since(start) > o.MaxTime {
			how = fmt.Sprintf("%d depth first, then %d sampled with seeds %d..%d", searched, sampled, seed0, seed0+uint64(sampled)-1)
			if runs < o.Budget {
				how += fmt.Sprintf(", stopped at the %v cap", o.MaxTime)
			}
			break
		}
	}
	stats := fmt.Sprintf("%4.1fs  %s (%s)", time.Since(start).Seconds(), plural(runs, "schedule"), how)
	if want == wantViolation {
		fmt.Printf("%sno violation ... FAIL  %s\n", head, stats)
		t.Fatalf("%sharness went blind: no schedule of %d showed a violation, so this run proves nothing", head, runs)
	}
	fmt.Printf("%sno violation ... ok  %s\n", head, stats)
	t.Logf("%sno violation in %s (%s)", head, plural(runs, "schedule"), how)
}

// parseSchedule reads a schedule's id: a seed, or turns joined by ".".
func parseSchedule(id string) *schedule {
	if seed, err := strconv.ParseUint(id, 10, 64); err == nil {
		return &schedule{rnd: rand.New(rand.NewPCG(seed, 0))}
	}
	return &schedule{turns: strings.Split(id, ".")}
}

// seedOf is the first seed of a test's sample: fixed per test, so that a
// run is the same every time.
func seedOf(name string) uint64 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	return uint64(h.Sum32() % 1000000)
}

// replayCommand is the command that runs one schedule of t again.
func replayCommand(t testing.TB, id string) string {
	tags := ""
	if exerciseMode {
		tags = "-tags exercise "
	}
	dir := "."
	if wd, err := os.Getwd(); err == nil {
		dir = "./labs/" + filepath.Base(wd) // a lab's directory, labs/NN-topic
		if filepath.Base(wd) == "labs" {
			dir = "./labs" // the harness's own tests
		}
	}
	return fmt.Sprintf("%s=%s go test %s-count=1 -run '^%s$' %s", scheduleEnv, id, tags, t.Name(), dir)
}

// ReleaseRace is the race of labs 03 and 04 ([StallInRelease] explored):
// A takes the lock, works and releases it; its lease may run out at any
// moment while it holds the key (an event: a pause past the lease, the
// key expired at once); B and C each try once for the lock and, if they
// got it, work and release. A's release stops at points (the lock's own
// hook points between check and delete) and before each of its Redis
// commands after the first. Whatever the order, no two clients may be
// inside at once: a release that deletes another's lock lets C in beside
// B.
func ReleaseRace(points ...string) Race {
	return Race{
		Points:   points,
		Commands: 3,
		Actors: func(s *Scene, impl *Impl) []*Actor {
			a, b, c := s.Client("A", impl), s.Client("B", impl), s.Client("C", impl)
			lease := s.Event("expire", func() bool {
				return s.Owner(s.Value()) == "A"
			}, func() {
				s.Must(s.Redis().PExpire(s.Ctx, s.Key, time.Millisecond).Err())
				s.WaitFor(s.Key+" is gone", func() (bool, error) {
					n, err := s.Redis().Exists(s.Ctx, s.Key).Result()
					return n == 0, err
				}, "A's lease runs out (A paused past it): %s expired", s.Key)
			})
			return []*Actor{
				s.Actor(a, "trylock+enter+exit", "unlock"),
				lease,
				s.Actor(b, "trylock+enter", "exit+unlock"),
				s.Actor(c, "trylock+enter", "exit+unlock"),
			}
		},
	}
}

// Crash is an event that ends a's part where it stands, as a crash of its
// process would ([Client.crashInPlace]): its connections close, so what
// the operation a is parked in was about to send never reaches Redis, and
// a does nothing more. Named "crash" in schedules; ready while a has a
// part left.
func (s *Scene) Crash(a *Actor) *Actor {
	return s.Event("crash", func() bool { return !a.done }, func() {
		s.t.Helper()
		s.Fault("%s crashes", a.name)
		a.client.crashInPlace()
		a.call = nil // it fails on its closed connections, or retries until it gives up: a crashed process has no say
		a.done = true
	})
}
