package lab05_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/history"
	"github.com/locklab/locklab/labs"
	"github.com/locklab/locklab/watchdog"
)

// Part 2, explored. pausedHolder forces one ordering: A frozen before
// its watchdog's next renewal, B in, then A's watchdog, then A's write.
// frozenRace orders the same steps every way the story allows. A takes
// the lock, its watchdog renews (a round granted by the schedule, see
// gate), renews again and A ships the order, then A releases. A's lease
// may run out (the event "expire": A's process frozen past it) at any
// moment while A's watchdog has a renewal to come before A's job goes on,
// which is when a real process resumes after a pause (the watchdog's
// late timer fires first; a job that writes before its lock could speak
// is the pause fencing is for, question 6), including between two
// commands of one renewal. Once it has run out, B tries once for the lock
// and, if it got it, ships and releases. Whatever the order, A must not
// ship after its lease ran out: its watchdog must tell it (Done).
var frozenRace = labs.Race{
	Ops:      []string{renew},
	Commands: 3,
	Actors: func(s *labs.Scene, impl *labs.Impl) []*labs.Actor {
		s.TTL = exploredLease
		a := s.Client("A", impl, labs.Param(gatedParam, "on"))
		// B is a bystander on correct.Mutex: a lock with a watchdog of
		// its own would renew on its own clock, ungated, and load the
		// renewal script that A's first renewal then finds loaded (one
		// Redis command fewer: a schedule that does not repeat itself).
		b := s.Client("B", fixedLease, labs.TTL(bLease))
		k := keepAlive(s)
		aa := s.Actor(a, "lock", renew, renew+"+"+ship+" "+order, "unlock")
		expire := s.Event("expire", func() bool {
			return !k.lapsed && aa.Next() == renew && s.Value() != ""
		}, func() {
			k.stop()
			k.midRenewal = aa.At()
			s.Must(s.Redis().PExpire(s.Ctx, s.Key, time.Millisecond).Err())
			s.WaitFor(s.Key+" is gone", func() (bool, error) {
				n, err := s.Redis().Exists(s.Ctx, s.Key).Result()
				return n == 0, err
			}, "A's process frozen past its lease: %s expired", s.Key)
			k.lapsed = true
		})
		return []*labs.Actor{
			aa,
			expire,
			s.Actor(b, "trylock+enter+write "+order, "exit+unlock").When(func() bool { return k.lapsed }),
		}
	},
	Final: func(s *labs.Scene, actors []*labs.Actor) {
		if err := actors[0].Err(); err != nil {
			s.Violation("A's job stopped: %v", err)
		}
		var expired time.Duration = -1
		for _, e := range s.Events() {
			switch {
			case e.Kind == history.Fault && expired < 0:
				expired = e.At
			case e.Kind == history.Write && e.Client == "A" && expired >= 0 && e.At > expired:
				if at := keeperOf(s).midRenewal; at != "" {
					s.Violation("A shipped the order after its lease ran out. The lease ran out between two commands of one renewal of A's watchdog (A paused before its Redis command %s of the round): the renewal went on as if the key were still A's. An owner check in one command and a PEXPIRE in the next is lab 04's race: check and renew in one step on the server (a script), and close Done when it answers 0", strings.TrimPrefix(at, "redis#"))
				} else {
					s.Violation("A shipped the order after its lease ran out: A's watchdog went on after the lease was gone (renewed, or took the key back) and did not close Done, so A's job never learned. Renew only while the key holds A's token, in one step on the server, and close Done when it does not")
				}
				return
			}
		}
	},
}

// exploredLease is A's lease in the explored race: short, so that its
// watchdog's tick (a third of it, in the exercise) comes soon when a
// round is granted. Between rounds the lease is kept alive (keepAlive).
const exploredLease = 300 * time.Millisecond

// keeper keeps A's lease alive while the schedule holds A's watchdog at
// its gate: the renewals held back stand for renewals made on time, so
// that the lease runs out only when the schedule says (expire). It
// extends the key only while it holds A's token, the first value it saw.
type keeper struct {
	lapsed     bool   // the lease ran out (expire happened)
	midRenewal string // where A was parked when it did, "" between steps

	done chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

var (
	keepersMu sync.Mutex
	keepers   = map[*labs.Scene]*keeper{}
)

func keeperOf(s *labs.Scene) *keeper {
	keepersMu.Lock()
	defer keepersMu.Unlock()
	return keepers[s]
}

// keepScript extends KEYS[1] to ARGV[2] ms if it holds ARGV[1].
var keepScript = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("PEXPIRE", KEYS[1], ARGV[2]) end return 0`)

// keepEvery is how often the keeper extends A's lease: a stall of the
// machine would have to last the lease less this to let it run out.
const keepEvery = 25 * time.Millisecond

func keepAlive(s *labs.Scene) *keeper {
	k := &keeper{done: make(chan struct{})}
	keepersMu.Lock()
	keepers[s] = k
	keepersMu.Unlock()
	obs, key := s.Redis(), s.Key
	k.wg.Go(func() {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		t := time.NewTicker(keepEvery)
		defer t.Stop()
		tok := ""
		for {
			select {
			case <-k.done:
				return
			case <-t.C:
			}
			if tok == "" {
				tok, _ = obs.Get(ctx, key).Result()
			}
			if tok != "" {
				_ = keepScript.Run(ctx, obs, []string{key}, tok, exploredLease.Milliseconds()).Err()
			}
		}
	})
	s.T().Cleanup(func() {
		k.stop()
		keepersMu.Lock()
		delete(keepers, s)
		keepersMu.Unlock()
	})
	return k
}

// stop stops the keeper and waits until it has.
func (k *keeper) stop() {
	k.once.Do(func() { close(k.done) })
	k.wg.Wait()
}

var frozenExplored = labs.ExploreOpts{Budget: 400}

func TestLab05_BrokenBlindRenewalExplored(t *testing.T) {
	labs.ExploreBroken(t, titlePause, frozenRace, blindRenewal, frozenExplored)
}

// watchdogExplored is package watchdog as the explored race needs it: a
// lease of its own far longer than a schedule, so that its own clock
// never calls the lease lost while the schedule holds its renewals, and a
// renewal every 50ms. Its lease runs out only when the schedule says.
var watchdogExplored = labs.Register("lab05-watchdog-explored", func(e *labs.Env) labs.Locker {
	w := watchdog.New(e.Redis(0), e.Key, watchdog.WithTTL(bLease), watchdog.WithInterval(50*time.Millisecond), watchdog.WithHook(e.Hook))
	m := &subject{inner: w, detach: true}
	m.gated(e)
	return m
})

func TestLab05_FixedWatchdogExplored(t *testing.T) {
	labs.ExploreFixed(t, titlePause, frozenRace, watchdogExplored, frozenExplored)
}

func TestLab05_ExerciseExplored(t *testing.T) {
	labs.ExploreExercise(t, titlePause, frozenRace, exercise, frozenExplored)
}
