package labs_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/proc"
	"github.com/locklab/locklab/labs"
)

func TestMain(m *testing.M) { labs.Main(m) }

// errBusy is a sentinel that must survive the trip from a child process.
var errBusy = labs.RegisterError(errors.New("test: busy"), "busy")

// semLock is a lock that works only inside one process: a channel of one
// slot shared by every client of the process. It calls hook point "held"
// after acquiring.
type semLock struct {
	env  *labs.Env
	held bool
}

var sem = make(chan struct{}, 1)

func (l *semLock) Lock(ctx context.Context) error {
	select {
	case sem <- struct{}{}:
		l.held = true
		l.env.Hook(ctx, "held")
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *semLock) TryLock(ctx context.Context) (bool, error) {
	select {
	case sem <- struct{}{}:
		l.held = true
		return true, nil
	default:
		return false, nil
	}
}

func (l *semLock) Unlock(context.Context) error {
	if !l.held {
		return errBusy
	}
	l.held = false
	<-sem
	return nil
}

var semImpl = labs.Register("harness-sem", func(e *labs.Env) labs.Locker { return &semLock{env: e} })

// sleepOp sleeps for the duration in arg or until cancelled; "ping" answers.
var (
	sleepOp = labs.RegisterOp("sleep", func(ctx context.Context, l *labs.Local, arg string) (string, error) {
		d, err := time.ParseDuration(arg)
		if err != nil {
			return "", err
		}
		select {
		case <-time.After(d):
			return "slept", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
	pingOp = labs.RegisterOp("ping", func(ctx context.Context, l *labs.Local, arg string) (string, error) {
		return "pong " + l.Name + " " + arg, nil
	})
)

func TestClientsRecordOnOneTimeline(t *testing.T) {
	for _, mode := range []string{"goroutine", "process"} {
		t.Run(mode, func(t *testing.T) {
			labs.Run(t, func(s *labs.Scene, impl *labs.Impl) {
				a := start(s, mode, "A", impl)
				s.Must(a.Lock())
				a.Enter()
				a.Exit()
				s.Must(a.Unlock())
				if out, err := a.Do(pingOp, "x"); err != nil || out != "pong A x" {
					t.Errorf("Do(ping) = %q, %v; want pong A x", out, err)
				}
				ev := s.Events()
				var kinds []string
				for _, e := range ev {
					if e.Client != "A" {
						t.Errorf("event %+v not from A", e)
					}
					kinds = append(kinds, string(e.Kind))
				}
				if got := strings.Join(kinds, ","); got != "want,acquire,enter,exit,release" {
					t.Errorf("events = %s; want want,acquire,enter,exit,release", got)
				}
			}, semImpl)
		})
	}
}

func start(s *labs.Scene, mode, name string, impl *labs.Impl) *labs.Client {
	if mode == "process" {
		return s.Process(name, impl)
	}
	return s.Client(name, impl)
}

func TestErrorsCrossTheWire(t *testing.T) {
	labs.Run(t, func(s *labs.Scene, impl *labs.Impl) {
		b := s.Process("B", impl)
		err := b.Unlock() // not held: the lock returns errBusy in the child
		if !errors.Is(err, errBusy) {
			t.Errorf("Unlock() = %v; want errors.Is(err, errBusy)", err)
		}
		call := b.Go(sleepOp, "1h")
		call.Cancel()
		if err := call.Err(); !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled call = %v; want context.Canceled", err)
		}
	}, semImpl)
}

func TestParkAtHookPoint(t *testing.T) {
	labs.Run(t, func(s *labs.Scene, impl *labs.Impl) {
		a := s.Process("A", impl)
		a.ParkAt("held")
		call := a.Go("lock", "")
		if p := a.WaitParked("other", "held"); p != "held" {
			t.Errorf("WaitParked = %q; want held", p)
		}
		select {
		case <-call.Done():
			t.Fatal("Lock returned while parked at its hook point")
		default:
		}
		a.Continue()
		s.Must(call.Err())
		// A point never reached: WaitParkedOr reports the call finished.
		a.ParkAt("never")
		if _, parked := a.WaitParkedOr(a.Go("unlock", ""), "never"); parked {
			t.Error("WaitParkedOr = true for a point the lock never reaches")
		}
	}, semImpl)
}

func TestKillAndFreezeAreReal(t *testing.T) {
	labs.Run(t, func(s *labs.Scene, impl *labs.Impl) {
		a := s.Process("A", impl)
		b := s.Process("B", impl)
		if _, err := a.Do(pingOp, ""); err != nil {
			t.Fatal(err)
		}
		pid := labs.ClientPid(a)
		call := a.Go(sleepOp, "1h")
		a.Kill()
		if err := call.Err(); !labs.IsGone(err) {
			t.Errorf("call cut off by Kill = %v; want a client-gone error", err)
		}
		if st := proc.State(pid); st != "" && st != "Z" {
			t.Errorf("killed client's process in state %q; want gone", st)
		}
		b.Freeze()
		if st := proc.State(labs.ClientPid(b)); st != "T" {
			t.Errorf("frozen client's state = %q; want T", st)
		}
		ping := b.Go(pingOp, "")
		time.Sleep(20 * time.Millisecond) // give a non-frozen client ample time to answer
		select {
		case <-ping.Done():
			t.Error("a frozen client answered")
		default:
		}
		b.Thaw()
		if _, err := ping.Result(); err != nil {
			t.Errorf("ping after Thaw = %v", err)
		}
	}, semImpl)
}

// noLock lets everyone in.
type noLock struct{}

func (noLock) Lock(context.Context) error            { return nil }
func (noLock) TryLock(context.Context) (bool, error) { return true, nil }
func (noLock) Unlock(context.Context) error          { return nil }

var noLockImpl = labs.Register("harness-nolock", func(*labs.Env) labs.Locker { return noLock{} })

func TestCheckerSeesOverlapAcrossProcesses(t *testing.T) {
	_, findings := labs.Run(t, func(s *labs.Scene, impl *labs.Impl) {
		a, b := s.Client("A", impl), s.Process("B", impl)
		a.Enter()
		b.Enter() // B's event comes from another process, on the same clock
		b.Exit()
		a.Exit()
	}, noLockImpl)
	if len(findings) != 1 || findings[0].Kind != "overlap" {
		t.Fatalf("findings = %v; want one overlap of A and B", findings)
	}
}

// overlapScenario puts two clients of impl in the critical section together
// unless the lock keeps B out.
func overlapScenario(s *labs.Scene, impl *labs.Impl) {
	a, b := s.Client("A", impl), s.Client("B", impl)
	s.Must(a.Lock())
	a.Enter()
	if ok, err := b.TryLock(); err == nil && ok {
		b.Enter()
		b.Exit()
		s.Must(b.Unlock())
	}
	a.Exit()
	s.Must(a.Unlock())
}

// TestHelperExpectations is run by TestHarnessFailsLoudly in a child test
// binary: each case must FAIL there.
func TestHelperExpectations(t *testing.T) {
	switch os.Getenv("LOCKLAB_HARNESS_CASE") {
	case "blind": // a "broken" lock that behaves: the harness must say it went blind
		labs.Broken(t, "Harness", overlapScenario, semImpl)
	case "red": // make red: a broken lock's run must fail with its timeline
		labs.Broken(t, "Harness", overlapScenario, noLockImpl)
	case "unsafe": // a fixed run with a violation fails
		labs.Fixed(t, "Harness", overlapScenario, noLockImpl)
	case "stuck-lock": // a learner's Lock that waits on a hold kept in its process
		labs.RunExercise(t, stuckLockScenario, semImpl)
	case "stuck-lock-etcd": // the same, in a scene whose locks live in etcd
		labs.RunExercise(t, func(s *labs.Scene, impl *labs.Impl) {
			s.Store = "etcd"
			stuckLockScenario(s, impl)
		}, semImpl)
	default:
		t.Skip("helper for TestHarnessFailsLoudly")
	}
}

func TestHarnessFailsLoudly(t *testing.T) {
	tests := []struct {
		name, env string
		want      []string
	}{
		{"blind", "LOCKLAB_HARNESS_CASE=blind", []string{"harness went blind", "no violation ... FAIL"}},
		{"red", "LOCKLAB_HARNESS_CASE=red LOCKLAB_RED=1", []string{"1 violation", "VIOLATION: A and B both in the critical section"}},
		{"unsafe", "LOCKLAB_HARNESS_CASE=unsafe", []string{"1 violation ... FAIL", "client A", "client B"}},
		// Named at the bound (5x the scene's 100ms lease), not at the
		// scene's 30s deadline.
		{"stuck-lock", "LOCKLAB_HARNESS_CASE=stuck-lock", []string{"client B: Lock did not return within 500ms (does it ignore its context / wait on something not in Redis?)", "--- the timeline so far"}},
		// The bound names the scene's store (Scene.Store).
		{"stuck-lock-etcd", "LOCKLAB_HARNESS_CASE=stuck-lock-etcd", []string{"client B: Lock did not return within 500ms (does it ignore its context / wait on something not in etcd?)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperExpectations$", "-test.v")
			cmd.Env = append(append(os.Environ(), "GORACE=atexit_sleep_ms=0"), strings.Fields(tt.env)...)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("helper case %s passed; want a failing test\n%s", tt.name, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("output of case %s lacks %q:\n%s", tt.name, w, out)
				}
			}
		})
	}
}

// stuckLockScenario has B, in A's process, Lock what A holds: semLock's
// Lock waits on the process's slot, which no lease ends.
func stuckLockScenario(s *labs.Scene, impl *labs.Impl) {
	s.TTL = 100 * time.Millisecond
	a, b := s.Client("A", impl), s.Client("B", impl)
	s.Must(a.Lock())
	s.Must(b.Lock())
}

// lockedWrite is a whole turn at the resource: Lock (200ms at most), the
// built-in write, Unlock.
var lockedWrite = labs.RegisterLockedOp("harness-locked-write", labs.LockedOp{
	Op: "write", Wait: 200 * time.Millisecond, Lock: "the test lock", Holder: "A holds it?",
})

// TestLockedOp: a LockedOp that cannot take the lock within its wait fails
// naming the lock and its suspect; once free, it locks, runs its op with
// the argument and unlocks, each on the timeline.
func TestLockedOp(t *testing.T) {
	labs.Run(t, func(s *labs.Scene, impl *labs.Impl) {
		a, b := s.Client("A", impl), s.Client("B", impl)
		s.Must(a.Lock())
		_, err := b.Do(lockedWrite, "x")
		if want := "B could not take the test lock within 200ms (A holds it?): context deadline exceeded"; err == nil || err.Error() != want {
			t.Errorf("Do(lockedWrite) while A holds the lock = %v; want %q", err, want)
		}
		s.Must(a.Unlock())
		if _, err := b.Do(lockedWrite, "y"); err != nil {
			t.Errorf("Do(lockedWrite) of a free lock = %v; want nil", err)
		}
		var got []string
		for _, e := range s.Events() {
			if e.Client == "B" {
				got = append(got, fmt.Sprintf("%s:%v:%s", e.Kind, e.OK, e.Text))
			}
		}
		if want := "want:false:,acquire:false:deadline exceeded,want:false:,acquire:true:,write:true:y,release:true:"; strings.Join(got, ",") != want {
			t.Errorf("B's events = %s; want %s", strings.Join(got, ","), want)
		}
		if sem := len(sem); sem != 0 {
			t.Errorf("the slot is taken after B's turn (%d); want it released", sem)
		}
	}, semImpl)
}

// ctxLock remembers the context its Lock got, as a lock that ties its hold
// to it (package watchdog) does.
type ctxLock struct {
	noLock
	ctx context.Context
}

func (l *ctxLock) Lock(ctx context.Context) error { l.ctx = ctx; return nil }

var (
	ctxLockImpl = labs.Register("harness-ctxlock", func(*labs.Env) labs.Locker { return &ctxLock{} })
	ctxAliveOp  = labs.RegisterOp("ctx-alive", func(_ context.Context, l *labs.Local, _ string) (string, error) {
		return fmt.Sprint(l.Locker.(*ctxLock).ctx.Err() == nil), nil
	})
)

// TestLockContextOutlivesTheOperation: the context a lock gets from the
// "lock" operation stays alive after the operation returns, until the
// client stops.
func TestLockContextOutlivesTheOperation(t *testing.T) {
	for _, mode := range []string{"goroutine", "process"} {
		t.Run(mode, func(t *testing.T) {
			labs.Run(t, func(s *labs.Scene, impl *labs.Impl) {
				a := start(s, mode, "A", impl)
				s.Must(a.Lock())
				if out, err := a.Do(ctxAliveOp, ""); err != nil || out != "true" {
					t.Errorf("Lock's context after the op returned: alive = %q, %v; want true", out, err)
				}
			}, ctxLockImpl)
		})
	}
}

// busyNotHeld is a lab's own "not held" sentinel, registered with the
// harness's label.
var busyNotHeld = labs.RegisterError(errors.New("test: not held"), labs.LabelNotHeld)

// notHeldLock refuses every Unlock with busyNotHeld.
type notHeldLock struct{ noLock }

func (notHeldLock) Unlock(context.Context) error { return fmt.Errorf("unlock: %w", busyNotHeld) }

var notHeldImpl = labs.Register("harness-not-held", func(*labs.Env) labs.Locker { return notHeldLock{} })

// TestNotHeldAcrossTheWire: NotHeld recognises a lab's own sentinel from a
// child process, and Release treats it as an answer.
func TestNotHeldAcrossTheWire(t *testing.T) {
	for _, mode := range []string{"goroutine", "process"} {
		t.Run(mode, func(t *testing.T) {
			labs.Run(t, func(s *labs.Scene, impl *labs.Impl) {
				a := start(s, mode, "A", impl)
				if err := a.Unlock(); !labs.NotHeld(err) {
					t.Errorf("NotHeld(%v) = false; want true", err)
				}
				if a.Release() {
					t.Error("Release() = true for a refused Unlock")
				}
				if labs.NotHeld(errBusy) || labs.NotHeld(nil) {
					t.Error("NotHeld is true for an error with another label, or nil")
				}
			}, notHeldImpl)
		})
	}
}

// twoCommands is a lock whose TryLock sends two commands, GET then SET,
// with no hook of its own between them.
type twoCommands struct{ env *labs.Env }

func (l twoCommands) TryLock(ctx context.Context) (bool, error) {
	c := l.env.Redis(0)
	if err := c.Get(ctx, "k").Err(); err != nil && !errors.Is(err, redis.Nil) {
		return false, err
	}
	return true, c.Set(ctx, "k", l.env.Client, 0).Err()
}
func (l twoCommands) Lock(ctx context.Context) error { _, err := l.TryLock(ctx); return err }
func (l twoCommands) Unlock(context.Context) error   { return nil }

var twoCommandsImpl = labs.Register("harness-two-commands", func(e *labs.Env) labs.Locker { return twoCommands{e} })

// TestParkBeforeCommand: labs.Command(n) stalls a client before the n-th
// command of an operation, in this process and in a child, and a point
// past the last command is never reached.
func TestParkBeforeCommand(t *testing.T) {
	for _, mode := range []string{"goroutine", "process"} {
		t.Run(mode, func(t *testing.T) {
			labs.Run(t, func(s *labs.Scene, impl *labs.Impl) {
				a := start(s, mode, "A", impl)
				a.ParkAt(labs.Command(2))
				call := a.Go("trylock", "")
				a.WaitParked(labs.Command(2))
				// Parked between its GET and its SET: the key is not set yet.
				if n, err := s.Redis().Exists(s.Ctx, "k").Result(); err != nil || n != 0 {
					t.Errorf("EXISTS k = %d, %v while A is parked before its SET; want 0", n, err)
				}
				a.Continue()
				s.Must(call.Err())
				if v, err := s.Redis().Get(s.Ctx, "k").Result(); err != nil || v != "A" {
					t.Errorf("GET k = %q, %v after A went on; want A", v, err)
				}
				a.ParkAt(labs.Command(3))
				if _, parked := a.WaitParkedOr(a.Go("trylock", ""), labs.Command(3)); parked {
					t.Error("parked at command 3 of an operation that sends 2")
				}
			}, twoCommandsImpl)
		})
	}
}

// clientIDs is a lock whose TryLock reports, in its lane, the connection
// ids of two commands sent one after the other on its pool.
type clientIDs struct{ env *labs.Env }

func (l clientIDs) TryLock(ctx context.Context) (bool, error) {
	c := l.env.Redis(0)
	first, err := c.ClientID(ctx).Result()
	if err != nil {
		return false, err
	}
	second, err := c.ClientID(ctx).Result()
	return first != second, err
}
func (l clientIDs) Lock(ctx context.Context) error { return nil }
func (l clientIDs) Unlock(context.Context) error   { return nil }

var clientIDsImpl = labs.Register("harness-client-ids", func(e *labs.Env) labs.Locker { return clientIDs{e} })

// TestSpreadHandsOutConnectionsInTurn: in an exercise run, two commands
// sent one after the other go out on different connections; otherwise the
// pool reuses the one it just got back.
func TestSpreadHandsOutConnectionsInTurn(t *testing.T) {
	for _, spread := range []bool{false, true} {
		t.Run(fmt.Sprint("spread=", spread), func(t *testing.T) {
			labs.Run(t, func(s *labs.Scene, impl *labs.Impl) {
				a := s.Process("A", impl, func(e *labs.Env) { e.Spread = spread })
				differ, err := a.TryLock()
				s.Must(err)
				if differ != spread {
					t.Errorf("two commands in a row on different connections: %v; want %v", differ, spread)
				}
			}, clientIDsImpl)
		})
	}
}

// TestInProcessHoldEndsWithItsTest: a hold that a goroutine client or a
// Local keeps in this process (semLock's slot) is released when its test
// ends, as a process's exit would, whether or not the scenario unlocked:
// the next test's clients find the lock free.
func TestInProcessHoldEndsWithItsTest(t *testing.T) {
	for _, mode := range []string{"client", "local"} {
		t.Run(mode, func(t *testing.T) {
			t.Run("holds", func(t *testing.T) {
				labs.Run(t, func(s *labs.Scene, impl *labs.Impl) {
					switch mode {
					case "client":
						s.Must(s.Client("A", impl).Lock())
					case "local":
						if ok, err := s.Local("A", impl).TryLock(s.Ctx); err != nil || !ok {
							t.Fatalf("TryLock = %v, %v; want true", ok, err)
						}
					}
				}, semImpl)
			})
			t.Run("next", func(t *testing.T) {
				labs.Run(t, func(s *labs.Scene, impl *labs.Impl) {
					b := s.Client("B", impl)
					if ok, err := b.TryLock(); err != nil || !ok {
						t.Fatalf("TryLock after the holder's test ended = %v, %v; want true: its hold outlived its test", ok, err)
					}
					s.Must(b.Unlock())
				}, semImpl)
			})
		})
	}
}
