package lab13_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/locklab/locklab/etcdlock"
	"github.com/locklab/locklab/internal/rig"
	"github.com/locklab/locklab/internal/sysclient"
	"github.com/locklab/locklab/labs"
	lab13 "github.com/locklab/locklab/labs/13-consensus"
)

// Part 1's race, explored: A takes the lock, writes order 1001's status
// and unlocks; its lease may run out at any moment while it holds a claim
// (an event: a pause past the lease, the lease revoked at once, so etcd
// deletes A's claim); B, once A's claim is gone, takes the lock, writes
// and unlocks, in one turn (where B stops changes nothing A can see). A
// parks at the lock's hook points (acquired, before-release) and right
// before its write leaves it (lab13.HookBeforeWrite). Whatever the order, no write may land after
// a write with a newer token: a write that goes out after A's lease ran
// out must be refused by etcd.
//
// The exploration's etcd lives as long as the test, not a schedule: it is
// started with the test's t (quiet, for an exercise, so that a failing
// run leaves etcd's log out, as Scene.ServerT does).
func pausedRace(t *testing.T, quiet bool) labs.Race {
	t.Helper()
	var st testing.TB = t
	if quiet {
		st = labs.QuietT(t)
	}
	var (
		once sync.Once
		eps  string
		c    *clientv3.Client
	)
	// One etcd member for every schedule, started with the first; each
	// schedule starts from no keys.
	start := func(s *labs.Scene) {
		once.Do(func() {
			e := rig.StartEtcd(st, 1)
			eps = strings.Join(e.Endpoints(), ",")
			var err error
			c, err = sysclient.Etcd(e.Endpoints()...)
			if err != nil {
				t.Fatalf("etcd client: %v", err)
			}
			t.Cleanup(func() { _ = c.Close() })
		})
		_, err := c.Delete(s.Ctx, "", clientv3.WithPrefix())
		s.Must(err)
		s.Params[etcdParam] = eps
		s.Store = "etcd"
	}
	return labs.Race{
		Points: []string{etcdlock.HookAcquired, etcdlock.HookBeforeRelease, lab13.HookBeforeWrite},
		Ops:    []string{"lock", "unlock", writeOrder},
		Actors: func(s *labs.Scene, impl *labs.Impl) []*labs.Actor {
			start(s)
			s.TTL = lease
			a := s.Client("A", impl)
			b := s.Client("B", impl, labs.TTL(long))
			claims := func() []*clientv3.GetResponse {
				resp, err := c.Get(s.Ctx, s.Key+"/", clientv3.WithPrefix())
				s.Must(err)
				return []*clientv3.GetResponse{resp}
			}
			expired := false
			expire := s.Event("expire", func() bool {
				return !expired && len(claims()[0].Kvs) > 0 // A has a claim (B has none before this)
			}, func() {
				kv := claims()[0].Kvs[0]
				_, err := c.Revoke(s.Ctx, clientv3.LeaseID(kv.Lease))
				s.Must(err)
				expired = true
				waitKeyGone(s, c, string(kv.Key), "A's lease runs out (A paused past it): etcd deleted its claim")
			})
			aa := s.Actor(a, "lock", writeOrder+" "+dataA, "unlock")
			ba := s.Actor(b, lockWriteUnlock+" "+dataB).When(func() bool {
				return expired || aa.Ended() > 0
			})
			return []*labs.Actor{aa, expire, ba}
		},
	}
}

// lockWriteUnlock is B's part in the race: Lock, write arg, Unlock, with
// no hook point armed. Its Lock waits at most 2s: a write that takes the
// lock again (after A's claim is gone) keeps B out until A unlocks, which
// in the race is a later turn; B then gives up instead of waiting for it.
var lockWriteUnlock = labs.RegisterLockedOp("lock-write-unlock", labs.LockedOp{
	Op: writeOrder, Wait: 2 * time.Second, Lock: "the lock", Holder: "A took it again?",
})

var pausedExplored = labs.ExploreOpts{Exhaustive: true, Budget: 400}

func TestLab13_BrokenPausedHolderExplored(t *testing.T) {
	t.Parallel()
	labs.ExploreBroken(t, titlePause, pausedRace(t, false), etcdUnguarded, pausedExplored)
}

func TestLab13_FixedEtcdRefusesStaleWriteExplored(t *testing.T) {
	t.Parallel()
	labs.ExploreFixed(t, titlePause, pausedRace(t, false), etcdGuarded, pausedExplored)
}

func TestLab13_ExerciseExplored(t *testing.T) {
	t.Parallel()
	labs.ExploreExercise(t, titlePause, pausedRace(t, true), exercise, pausedExplored)
}
