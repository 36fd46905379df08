package lab09_test

import (
	"testing"
	"time"

	"github.com/locklab/locklab/labs"
)

func TestMain(m *testing.M) { labs.Main(m) }

const (
	titlePaused   = "Lab 09 (fencing, paused writer)"
	titleRedlock  = "Lab 09 (fencing, Redlock holder paused)"
	titleClock    = "Lab 09 (fencing, Redlock clock jump, modeled)"
	titleFailover = "Lab 09 (fencing, the counter goes back)"
)

const (
	// shortLease is the lease of a client the scenario freezes until its
	// lock has expired: the scenario waits about this long. A checks its
	// lock right after taking it; at 1s even a loaded machine leaves it
	// most of the lease.
	shortLease = time.Second
	// lease is the lease of every other client: far longer than any run,
	// so that nothing expires unless the scenario waits for it.
	lease = 10 * time.Second
	// failoverLease is the lease in part 3, longer than the failover, so
	// A's lock is still valid by A's own clock when B gets it (lab 07).
	failoverLease = 30 * time.Second
	// firstToken is A's token in Kleppmann's example; the scenarios set
	// the counter one below it.
	firstToken = 33
	// order is the row both workers write.
	order = "order:1001"
	// dbParam names the scene parameter holding the SQLite file's path,
	// handed to every client, in this process or a child.
	dbParam = "db"
)

// What the workers write: A was about to mark the order packed when it
// froze; B, which took the order over, packed and shipped it.
const (
	dataA = "packed by A"
	dataB = "shipped by B"
)

// counterOf returns the name package fencing gives the token counter of a
// lock key without a {hash tag} (its doc, "Keys"); lab09.Redlock is given
// the same name. The scenarios check that A's first token really comes out
// as firstToken, so a renamed counter fails loudly.
func counterOf(key string) string { return "{" + key + "}:fence" }

// pausedWriter is Kleppmann's example, for real. A takes the lock (token
// 33) and checks it has plenty of lease left; then its process freezes,
// just before the write it was about to make. Its lease runs out. B takes
// the lock (token 34) and writes order 1001. A thaws and makes its write.
//
// The critical section that matters here is the write: A and B both
// believe they hold the lock at some point, which no lease lock can
// prevent (labs 03 and 08). What must not happen is the store accepting
// A's write after B's.
func pausedWriter(s *labs.Scene, impl *labs.Impl) {
	useDatabase(s)
	setCounter(s, s.Node(), firstToken-1)
	s.TTL = shortLease
	a := s.Process("A", impl) // a real process, so its pause is a real SIGSTOP
	b := s.Client("B", impl, labs.TTL(lease))

	s.Must(a.Lock())
	expectToken(s, "A", firstToken)
	a.MustDo(labs.ValidFor, "") // A checks its lock before writing: plenty left

	a.Freeze() // a stop-the-world GC pause, between the check and the write
	s.WaitExpired(s.Key)

	s.Must(b.Lock())
	writeAsHolder(s, b, dataB)

	a.Thaw()
	write(s, a, dataA)    // the write A was about to make when it froze
	a.ReleaseAfterFault() // not held: A finds out only now
	s.Must(b.Unlock())
	showRow(s, b)
	checkTokensIncrease(s)
}

// Part 1: a paused writer, and a store that checks the token.

func TestLab09_BrokenStaleWriteOverwrites(t *testing.T) {
	labs.Broken(t, titlePaused, pausedWriter, unchecked)
}

func TestLab09_FixedStoreRejectsStaleToken(t *testing.T) {
	labs.Fixed(t, titlePaused, pausedWriter, fenced)
}

func TestLab09_Exercise(t *testing.T) {
	labs.Exercise(t, titlePaused, pausedWriter, exercise)
}

// Part 2: lab 08's Redlock failures (b) and (c), with fencing tokens.

func TestLab09_BrokenRedlockPauseUnfenced(t *testing.T) {
	labs.Broken(t, titleRedlock, redlockPaused, redlockUnchecked)
}

func TestLab09_FixedRedlockPauseFenced(t *testing.T) {
	labs.Fixed(t, titleRedlock, redlockPaused, redlockFenced)
}

func TestLab09_FixedRedlockClockJumpFenced(t *testing.T) {
	labs.Fixed(t, titleClock, redlockClockJump, redlockFenced)
}

// Part 3: the limit. The token counter lives on one Redis primary, and a
// failover takes it back. There is no fix in Redis; the README says where
// tokens that cannot go back come from.

func TestLab09_BrokenCounterGoesBackAfterFailover(t *testing.T) {
	labs.Broken(t, titleFailover, counterGoesBack, fenced)
}
