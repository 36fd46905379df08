package contract_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/internal/locktest"
	"github.com/locklab/locklab/naive"
)

// The suite must be able to fail: run on naive's locks, each broken on
// purpose, it catches each one's mistake in the user's world. The naive
// runs happen in a child process (this test binary, run again), whose
// failures are the expected outcome; the parent checks it failed, and
// why.

// naiveEnv, set, makes TestUserWorldNaive run the suite on naive's locks.
const naiveEnv = "LOCKLAB_USERWORLD_NAIVE"

// naiveKinds are the naive locks the suite must catch, and the words of
// the failure each must produce.
var naiveKinds = []struct {
	name  string
	make  func(c naive.Client, key string) locker
	fault string // the subtest that must catch it
	want  string
}{
	// SET NX sent again after its reply was lost finds its own key and
	// says taken (no GET to recognise its token): stuck until the TTL.
	{"BlindDelete", func(c naive.Client, key string) locker {
		return naive.NewBlindDelete(c, key, naive.WithTTL(uwTTL), naive.WithPoll(5*time.Millisecond))
	}, "acquire_reply_lost", "the lock is stuck"},
	// The same, met by TryLock on a free lock: it says taken, and nobody
	// holds the lock but its own key.
	{"BlindDeleteTry", func(c naive.Client, key string) locker {
		return naive.NewBlindDelete(c, key, naive.WithTTL(uwTTL), naive.WithPoll(5*time.Millisecond))
	}, "acquire_reply_lost,_TryLock", "on a free lock: it says another holds the lock"},
	// SETNX sent again after its reply was lost finds its own key and
	// says taken; the EXPIRE never follows: the key stays for good.
	{"SetNXThenExpire", func(c naive.Client, key string) locker {
		return naive.NewSetNXThenExpire(c, key, naive.WithTTL(uwTTL), naive.WithPoll(5*time.Millisecond))
	}, "acquire_reply_lost", "acquire reply lost during Lock, then Lock again: a's Lock ="},
	// The release script sent again after its reply was lost takes a
	// second count back.
	{"Counted", func(c naive.Client, key string) locker {
		return naive.NewCounted(c, key, naive.WithTTL(uwTTL), naive.WithPoll(5*time.Millisecond))
	}, "release_reply_lost", "release reply lost during Unlock: a's Unlock ="},
}

func TestUserWorldCatchesNaive(t *testing.T) {
	if os.Getenv(naiveEnv) != "" {
		t.Skip("the child process runs TestUserWorldNaive")
	}
	for _, nk := range naiveKinds {
		t.Run(nk.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run", "^TestUserWorldNaive$/^"+nk.name+"$/^"+nk.fault+"$", "-test.count=1")
			cmd.Env = append(os.Environ(), naiveEnv+"=1")
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the user-world suite passed naive.%s, which is broken on purpose: harness went blind\n%s", nk.name, out)
			}
			if !strings.Contains(string(out), nk.want) {
				t.Fatalf("the suite failed naive.%s, but not with %q:\n%s", nk.name, nk.want, out)
			}
		})
	}
}

// TestUserWorldNaive runs the suite on naive's locks; it runs only as the
// child of TestUserWorldCatchesNaive, and fails there on purpose.
func TestUserWorldNaive(t *testing.T) {
	if os.Getenv(naiveEnv) == "" {
		t.Skip("runs only as the child of TestUserWorldCatchesNaive")
	}
	for _, nk := range naiveKinds {
		t.Run(nk.name, func(t *testing.T) {
			k := kind{name: "naive-" + nk.name, nodes: 1}
			conn := func(t *testing.T, faulty bool) *rconn {
				c := &rconn{t: t}
				var ps = proxiesFor(t, k)
				if !faulty {
					ps = nil
				}
				c.proxies = ps
				c.clients = partyClients(t, k, user, ps)
				return c
			}
			lk := locktest.Kind[*rconn]{
				Name: k.name,
				Conn: func(t *testing.T) *rconn { return conn(t, false) },
				New: func(c *rconn, key string, _ locktest.Options) locktest.Fenced {
					c.key = key
					return uwLock{nk.make(c.clients[0], key)}
				},
				ErrNotHeld:     naive.ErrNotHeld,
				ErrNotObtained: naive.ErrNotObtained,
				Waiting:        refusedOnce,
				Fenceless:      true,
			}
			warm := lk.Conn(t) // load the scripts (see TestUserWorld)
			locktest.Warm(t, t.Context(), lk.New(warm, newKey(t, k), locktest.Options{}))
			w := locktest.World[*rconn]{
				Faulty:  func(t *testing.T) *rconn { return conn(t, true) },
				Faults:  redisFaults(),
				Call:    time.Second,
				Recover: 2 * time.Second,
			}
			locktest.UserWorld(t, lk, w, func(t testing.TB) string { return newKey(t.(*testing.T), k) })
		})
	}
}
