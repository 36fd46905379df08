package correct_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/correct"
	"github.com/locklab/locklab/internal/leakcheck"
	"github.com/locklab/locklab/internal/locktest"
	"github.com/locklab/locklab/internal/rig"
)

// calls runs every method of m that talks to Redis and returns their
// errors by name.
func calls(ctx context.Context, m *correct.Mutex) map[string]error {
	errs := map[string]error{}
	errs["Lock"] = m.Lock(ctx)
	_, errs["TryLock"] = m.TryLock(ctx)
	errs["Extend"] = m.Extend(ctx, time.Second)
	_, errs["TTL"] = m.TTL(ctx)
	errs["Unlock"] = m.Unlock(ctx)
	return errs
}

func TestInvalidArguments(t *testing.T) {
	c := newClient(t)
	var nilClient *redis.Client
	tests := []struct {
		name string
		new  func(key string) *correct.Mutex
		want string // in the error message
	}{
		{"nil client", func(key string) *correct.Mutex { return correct.New(nil, key) }, "nil client"},
		{"nil *redis.Client", func(key string) *correct.Mutex { return correct.New(nilClient, key) }, "nil client"},
		{"empty key", func(string) *correct.Mutex { return correct.New(c, "") }, "empty key"},
		{"zero ttl", func(key string) *correct.Mutex { return correct.New(c, key, correct.WithTTL(0)) }, "ttl"},
		{"negative ttl", func(key string) *correct.Mutex { return correct.New(c, key, correct.WithTTL(-time.Second)) }, "ttl"},
		{"ttl under 1ms", func(key string) *correct.Mutex { return correct.New(c, key, correct.WithTTL(time.Microsecond)) }, "ttl"},
		{"negative tries", func(key string) *correct.Mutex { return correct.New(c, key, correct.WithTries(-1)) }, "tries"},
		{"zero Mutex", func(string) *correct.Mutex { return new(correct.Mutex) }, "not made by New"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := newKey(t) // its Cleanup checks that nothing was written
			m := tt.new(key)
			for name, err := range calls(testContext(t), m) {
				if !errors.Is(err, correct.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("%s = %v; want ErrInvalid mentioning %q", name, err, tt.want)
				}
			}
			if m.Token() != "" || !m.Until().IsZero() {
				t.Errorf("Token() = %q, Until() = %v; want \"\" and zero", m.Token(), m.Until())
			}
		})
	}
}

// TestEndedContext: Lock and TryLock with a context that has already ended
// return ErrNotObtained joined with ctx.Err() without touching Redis. The
// client points at a server that has been killed, so any traffic would
// show up as a dial error in the result.
func TestEndedContext(t *testing.T) {
	rig.RequireControl(t)
	dead := rig.Start(t)
	c := dead.Client()
	if err := dead.Kill(); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()

	for _, ctx := range []context.Context{cancelled, expired} {
		m := correct.New(c, "correct-test:ended-ctx")
		lockErr := m.Lock(ctx)
		ok, tryErr := m.TryLock(ctx)
		for name, err := range map[string]error{"Lock": lockErr, "TryLock": tryErr} {
			want := errors.Join(correct.ErrNotObtained, ctx.Err())
			if !errors.Is(err, correct.ErrNotObtained) || !errors.Is(err, ctx.Err()) || err.Error() != want.Error() {
				t.Errorf("%s(ended ctx) = %q; want %q", name, err, want)
			}
		}
		if ok {
			t.Errorf("TryLock(ended ctx) = true; want false")
		}
	}
}

// TestUnreachableRedis: with the server gone, every call returns a wrapped
// transport error at once: not ErrNotObtained (Lock does not spin on a
// dead server) and not ErrNotHeld (the lock's state is unknown).
func TestUnreachableRedis(t *testing.T) {
	rig.RequireControl(t)
	leakcheck.Guard(t)
	node := rig.Start(t)
	c := node.Client()
	ctx := testContext(t)
	const key = "correct-test:unreachable"
	held := correct.New(c, key)
	mustLock(t, ctx, held)
	tok := held.Token()
	if err := node.Kill(); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	fresh := correct.New(c, key)
	lockErr := fresh.Lock(ctx)
	_, tryErr := fresh.TryLock(ctx)
	_, ttlErr := held.TTL(ctx)
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"Lock", lockErr, `correct: acquire "` + key + `"`},
		{"TryLock", tryErr, `correct: acquire "` + key + `"`},
		{"Extend", held.Extend(ctx, time.Second), `correct: extend "` + key + `"`},
		{"TTL", ttlErr, `correct: ttl "` + key + `"`},
		{"Unlock", held.Unlock(ctx), `correct: release "` + key + `"`},
	}
	// A refused dial fails in microseconds; a hang would take the
	// client's 2s timeout or the release's own.
	if elapsed := time.Since(start); elapsed > time.Second {
		t.Errorf("calls on a dead server took %v; want well under 1s", elapsed)
	}
	for _, tt := range tests {
		if tt.err == nil || !strings.Contains(tt.err.Error(), tt.want) ||
			errors.Is(tt.err, correct.ErrNotObtained) || errors.Is(tt.err, correct.ErrNotHeld) {
			t.Errorf("%s on a dead server = %v; want an error starting %s, not a sentinel", tt.name, tt.err, tt.want)
		}
	}
	if got := held.Token(); got != tok {
		t.Errorf("Token() after a failed Unlock = %q; want %q kept, so Unlock can be retried", got, tok)
	}
}

// lostReply is a Client whose acquisition (take.lua) reaches Redis but
// whose reply is lost, as when a connection drops or a context ends while
// the reply is on the wire. It wraps a real client: no mock.
type lostReply struct {
	*redis.Client
	afterSet func() // called once the acquisition has run; may cancel the context
	err      error  // what the caller sees instead of the reply
}

func (c lostReply) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	cmd := c.Client.EvalSha(ctx, sha, keys, args...)
	if sha != correct.Scripts["take.lua"].Script.Hash() || cmd.Err() != nil {
		return cmd // another script, or NOSCRIPT: Script.Run sends EVAL, which comes here next
	}
	c.afterSet()
	lost := redis.NewCmd(ctx)
	lost.SetErr(c.err)
	return lost
}

func (c lostReply) Eval(ctx context.Context, src string, keys []string, args ...any) *redis.Cmd {
	if src != correct.Scripts["take.lua"].Src {
		return c.Client.Eval(ctx, src, keys, args...)
	}
	c.Client.Eval(ctx, src, keys, args...)
	c.afterSet()
	lost := redis.NewCmd(ctx)
	lost.SetErr(c.err)
	return lost
}

// TestLostReplyLeavesNoKey: when take.lua ran but its reply never arrived,
// the failed Lock deletes the key it may have set, so no lock is left that
// nobody will release.
func TestLostReplyLeavesNoKey(t *testing.T) {
	c := newClient(t)
	errLost := errors.New("read: connection reset by peer")
	t.Run("transport error", func(t *testing.T) {
		key := newKey(t)
		m := correct.New(lostReply{Client: c, afterSet: func() {}, err: errLost}, key)
		err := m.Lock(testContext(t))
		if !errors.Is(err, errLost) || errors.Is(err, correct.ErrNotObtained) {
			t.Errorf("Lock with a lost reply = %v; want the wrapped transport error", err)
		}
		locktest.CheckGone(t, c, key, "after the failed Lock")
	})
	t.Run("context ended", func(t *testing.T) {
		key := newKey(t)
		ctx, cancel := context.WithCancel(testContext(t))
		defer cancel()
		m := correct.New(lostReply{Client: c, afterSet: cancel, err: context.Canceled}, key)
		err := m.Lock(ctx)
		if !errors.Is(err, correct.ErrNotObtained) || !errors.Is(err, context.Canceled) {
			t.Errorf("Lock cancelled during the SET = %v; want ErrNotObtained and Canceled", err)
		}
		locktest.CheckGone(t, c, key, "after the failed Lock")
	})
	t.Run("deadline passed before the context noticed", func(t *testing.T) {
		// go-redis sets the socket deadline from ctx; under load the
		// socket times out before the context's timer fires, so the
		// error is an i/o timeout while ctx.Err() is still nil.
		key := newKey(t)
		ctx := laggingContext{Context: testContext(t), deadline: time.Now().Add(5 * time.Millisecond)}
		pastDeadline := func() {
			for time.Now().Before(ctx.deadline) {
				time.Sleep(time.Millisecond)
			}
		}
		m := correct.New(lostReply{Client: c, afterSet: pastDeadline, err: os.ErrDeadlineExceeded}, key)
		err := m.Lock(ctx)
		if !errors.Is(err, correct.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Lock whose deadline passed during the SET = %v; want ErrNotObtained and DeadlineExceeded", err)
		}
		locktest.CheckGone(t, c, key, "after the failed Lock")
	})
}

// laggingContext has a deadline, but its Err stays nil after the deadline
// has passed, like a context whose timer has not fired yet.
type laggingContext struct {
	context.Context
	deadline time.Time
}

func (c laggingContext) Deadline() (time.Time, bool) { return c.deadline, true }
