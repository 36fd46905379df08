package lab09_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/fencing"
	"github.com/locklab/locklab/internal/history"
	"github.com/locklab/locklab/internal/rig"
	"github.com/locklab/locklab/labs"
	lab09 "github.com/locklab/locklab/labs/09-fencing"
)

// The workers of the order service as the lab builds them: a lock with
// fencing tokens, the store each writes order rows to, and the operations
// they run; then the helpers the scenarios share.

// store is what a worker writes order rows to: package fencing's Store
// (the fix), lab09.UncheckedStore (broken) or lab09.Exercise.
type store = lab09.Store

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
		base := ctx
		ctx = lab09.WithStatementHook(ctx, l.Env.Hook) // the lab can stall the worker between statements
		st, err := w.open(ctx, l.Env.Param(dbParam, ""))
		if err != nil {
			return "", err
		}
		defer st.Close()
		tok := fencing.Token(w.Fence())
		err = st.Write(ctx, order, data, tok)
		if err == nil {
			// The effect, not Write's word: a write is accepted when the
			// row holds it, read back on a connection of its own.
			row, rerr := lab09.ReadRow(base, w.open, l.Env.Param(dbParam, ""), order)
			if rerr != nil {
				return "", rerr
			}
			if row != fmt.Sprintf("%d %s", tok, data) {
				l.Write(data, false)
				l.Record(history.Event{Kind: history.Violation, Text: fmt.Sprintf("%s's write with token %d returned nil, but the row does not hold it (token and data: %s): only the store's Write said it succeeded. A write the row refused (zero rows changed) must return an error wrapping fencing.ErrStaleToken", l.Name, tok, row)})
				return "refused", nil
			}
		}
		if answer, ok := l.Answer(data, err, fencing.ErrStaleToken); ok {
			return answer, nil
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
		return lab09.ReadRow(ctx, w.open, l.Env.Param(dbParam, ""), order)
	})
)

func workerOf(l *labs.Local) (*worker, error) {
	w, ok := l.Locker.(*worker)
	if !ok {
		return nil, fmt.Errorf("lab09: client %s's lock is a %T, not a worker", l.Name, l.Locker)
	}
	return w, nil
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
