package lab09_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/fencing"
	"github.com/locklab/locklab/internal/history"
	"github.com/locklab/locklab/internal/rig"
	"github.com/locklab/locklab/labs"
	lab09 "github.com/locklab/locklab/labs/09-fencing"
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

// store is what a worker writes order rows to: package fencing's Store
// (the fix), lab09.UncheckedStore (broken) or lab09.Exercise.
type store interface {
	Write(ctx context.Context, id, data string, tok fencing.Token) error
	Read(ctx context.Context, id string) (data string, last fencing.Token, err error)
	Close() error
}

// opener opens a store on the SQLite file at path.
type opener func(ctx context.Context, path string) (store, error)

// openWith turns a package's Open function into an opener.
func openWith[S store](open func(context.Context, string) (S, error)) opener {
	return func(ctx context.Context, path string) (store, error) {
		s, err := open(ctx, path)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
}

// fencedLock is a lock with a fencing token and a lease end.
type fencedLock interface {
	labs.Locker
	Fence() uint64
	Until() time.Time
}

// worker is one worker of the order service: its lock, and the store it
// writes order rows to. The harness puts Fence (and Token, a Redlock's
// random owner value) on the timeline.
type worker struct {
	lock fencedLock
	open opener
}

func (w *worker) Lock(ctx context.Context) error            { return w.lock.Lock(ctx) }
func (w *worker) TryLock(ctx context.Context) (bool, error) { return w.lock.TryLock(ctx) }
func (w *worker) Unlock(ctx context.Context) error          { return w.lock.Unlock(ctx) }
func (w *worker) Fence() uint64                             { return w.lock.Fence() }
func (w *worker) Until() time.Time                          { return w.lock.Until() }

func (w *worker) Token() string {
	if t, ok := w.lock.(interface{ Token() string }); ok {
		return t.Token()
	}
	return ""
}

var (
	fencedStore    = openWith(fencing.OpenStore)
	uncheckedStore = openWith(lab09.OpenUnchecked)
	exerciseStore  = openWith(lab09.OpenExercise)
)

// fencingLock is package fencing's Mutex on the scene's first node.
func fencingLock(e *labs.Env) fencedLock {
	return lab09.NewMutex(fencing.New(e.Redis(0), e.Key, fencing.WithTTL(e.TTL), fencing.WithHook(e.Hook)))
}

// redlockWithTokens is package redlock on the scene's five nodes, with its
// fencing tokens from a counter on node 0. The per-node timeout is half the
// TTL, as in lab 08, so a busy machine never makes a live node look dead;
// and as in lab 08, each call waits for its commands to the slower nodes
// too (labs.SettledRedlock), so the nodes the lab shows are the same in
// every run.
func redlockWithTokens(e *labs.Env) fencedLock {
	return lab09.NewRedlock(labs.NewRedlock(e), e.Redis(0), counterOf(e.Key))
}

var (
	// Part 1: package fencing's lock, and the store that ignores the
	// tokens (broken), checks them (fixed), or is the learner's.
	unchecked = labs.Register("lab09-unchecked", func(e *labs.Env) labs.Locker {
		return &worker{lock: fencingLock(e), open: uncheckedStore}
	})
	fenced = labs.Register("lab09-fenced", func(e *labs.Env) labs.Locker {
		return &worker{lock: fencingLock(e), open: fencedStore}
	})
	exercise = labs.Register("lab09-exercise", func(e *labs.Env) labs.Locker {
		return &worker{lock: fencingLock(e), open: exerciseStore}
	})
	// Part 2: Redlock with tokens beside it.
	redlockUnchecked = labs.Register("lab09-redlock-unchecked", func(e *labs.Env) labs.Locker {
		return &worker{lock: redlockWithTokens(e), open: uncheckedStore}
	})
	redlockFenced = labs.Register("lab09-redlock-fenced", func(e *labs.Env) labs.Locker {
		return &worker{lock: redlockWithTokens(e), open: fencedStore}
	})
	_ = labs.RegisterError(syscall.ECONNREFUSED, "connection refused")
)

// Operations the clients run, in whichever process hosts them.
var (
	// writeOrder writes arg to order 1001's row through the worker's
	// store, with its fencing token, and records the store's verdict: a
	// refusal is an error wrapping fencing.ErrStaleToken. It opens the
	// database for the one write, so a frozen worker holds no connection.
	writeOrder = labs.RegisterOp("write-order", func(ctx context.Context, l *labs.Local, data string) (string, error) {
		w, err := workerOf(l)
		if err != nil {
			return "", err
		}
		ctx = lab09.WithStatementHook(ctx, l.Env.Hook) // the lab can stall the worker between statements
		st, err := w.open(ctx, l.Env.Param(dbParam, ""))
		if err != nil {
			return "", err
		}
		defer st.Close()
		tok := fencing.Token(w.Fence())
		err = st.Write(ctx, order, data, tok)
		switch {
		case err == nil:
			l.Write(data, true)
			return "accepted", nil
		case errors.Is(err, fencing.ErrStaleToken):
			l.Write(data, false)
			return "rejected", nil
		}
		return "", fmt.Errorf("%s's write with token %d: %w (a refused write must return an error wrapping fencing.ErrStaleToken)", l.Name, tok, err)
	})
	// readOrder returns order 1001's row as "<last token> <data>", read
	// through the worker's store. It records nothing.
	readOrder = labs.RegisterOp("read-order", func(ctx context.Context, l *labs.Local, _ string) (string, error) {
		w, err := workerOf(l)
		if err != nil {
			return "", err
		}
		st, err := w.open(ctx, l.Env.Param(dbParam, ""))
		if err != nil {
			return "", err
		}
		defer st.Close()
		data, last, err := st.Read(ctx, order)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%d %s", last, data), nil
	})
)

func workerOf(l *labs.Local) (*worker, error) {
	w, ok := l.Locker.(*worker)
	if !ok {
		return nil, fmt.Errorf("lab09: client %s's lock is a %T, not a worker", l.Name, l.Locker)
	}
	return w, nil
}

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

// useDatabase gives the scene a fresh SQLite file, shared by every client
// created after it.
func useDatabase(s *labs.Scene) {
	s.Params[dbParam] = filepath.Join(s.T().TempDir(), "orders.db")
}

// setCounter sets the lock's token counter on node to n, so that the next
// lock gets n+1, and says so on the timeline.
func setCounter(s *labs.Scene, node *rig.Node, n int) {
	c := redis.NewClient(rig.ClientOptions(node.Addr()))
	defer c.Close()
	s.Must(c.Set(s.Ctx, counterOf(s.Key), n, 0).Err())
	s.Note("token counter %s set to %d: the next lock gets %d", counterOf(s.Key), n, n+1)
}

// expectToken fails the test unless client name's last lock got token
// want: a token from elsewhere would make the whole timeline misleading.
func expectToken(s *labs.Scene, name string, want uint64) {
	s.T().Helper()
	var got uint64
	for _, e := range s.Events() {
		if e.Kind == history.Acquire && e.OK && e.Client == name {
			got = e.Fence
		}
	}
	if got != want {
		s.T().Fatalf("lab09: %s's lock got token %d; want %d (is %s still the token counter of %s?)",
			name, got, want, counterOf(s.Key), s.Key)
	}
}

// write has c write data to order 1001's row and reports whether the
// store accepted it. The verdict is on c's lane.
func write(s *labs.Scene, c *labs.Client, data string) bool {
	s.T().Helper()
	out, err := c.Do(writeOrder, data)
	s.Must(err)
	return out == "accepted"
}

// writeAsHolder is the write of the client that holds the lock with the
// newest token. The store must accept it: a store that refuses it is safe
// only because it is useless.
func writeAsHolder(s *labs.Scene, c *labs.Client, data string) {
	s.T().Helper()
	if !write(s, c, data) {
		s.Violation("the store refused %s's write: %s holds the lock, with the newest token", c.Name(), c.Name())
	}
}

// showRow notes what order 1001's row holds now, read through c's store,
// and returns its data.
func showRow(s *labs.Scene, c *labs.Client) string {
	s.T().Helper()
	out, err := c.Do(readOrder, "")
	s.Must(err)
	last, data, _ := strings.Cut(out, " ")
	s.Note("row %s = %q, last token %s", order, data, last)
	return data
}

// checkTokensIncrease declares a violation for every lock granted with a
// fencing token no larger than one granted before it. Fencing rests on
// that: the resource trusts the larger token to be the newer lock.
func checkTokensIncrease(s *labs.Scene) {
	var top history.Event
	for _, e := range s.Events() {
		if e.Kind != history.Acquire || !e.OK || e.Fence == 0 {
			continue
		}
		if top.Fence != 0 && e.Fence <= top.Fence {
			s.Violation("%s got token %d at %d ms, after %s got token %d at %d ms: the token counter went back",
				e.Client, e.Fence, e.At.Milliseconds(), top.Client, top.Fence, top.At.Milliseconds())
		}
		if e.Fence > top.Fence {
			top = e
		}
	}
}
