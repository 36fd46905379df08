package fencing_test

import (
	"context"
	"errors"
	"flag"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/locklab/locklab/fencing"
	"github.com/locklab/locklab/internal/keyslot"
	"github.com/locklab/locklab/internal/locktest"
)

var (
	fullEveryRun = flag.Bool("full", false,
		"make 10,000 acquisitions in TestTokensIncreaseAcrossClients on every -count run, not only the first")
	bigRan atomic.Bool // a 10,000-acquisition run already happened in this process
)

// TestTokensIncreaseAcrossClients has 16 clients, each with its own
// connection pool and Mutex, take one lock 10,000 times between them. Each
// holder records its token while it holds the lock, so the record is in
// acquisition order. The tokens must run 1, 2, 3, ...: strictly increasing,
// all distinct, and with no gaps, since the many refused attempts consume no
// token.
//
// The acquisitions are sequential by nature (one holder at a time), so they
// cost about two round trips each: 2-4s with -race on a busy 2-core
// machine. To keep -count=20 quick, only the first run in a test process
// makes 10,000; later runs make 1,000, unless the -full flag is given
// (go test ./fencing -count=20 -args -full).
func TestTokensIncreaseAcrossClients(t *testing.T) {
	t.Parallel()
	const clients = 16
	total := 10000
	if bigRan.Swap(true) && !*fullEveryRun {
		total = 1000
	}
	key := newKey(t)
	var (
		mu  sync.Mutex // protects got and who
		got = make([]fencing.Token, 0, total)
		who = make([]int, 0, total)
	)
	// A short fixed retry delay: waiters poll often enough to take the lock
	// from each other, but not so often that they starve the holder of CPU.
	retry := fencing.WithRetry(func(int) time.Duration { return 2 * time.Millisecond })
	g, ctx := errgroup.WithContext(t.Context())
	for i := range clients {
		m := fencing.New(redisClient(t), key, retry)
		g.Go(func() error {
			for {
				if err := m.Lock(ctx); err != nil {
					return err
				}
				// Inside the critical section: appends happen in lock order.
				mu.Lock()
				done := len(got) == total
				if !done {
					got = append(got, m.Token())
					who = append(who, i)
				}
				mu.Unlock()
				if err := m.Unlock(ctx); err != nil {
					return err
				}
				if done {
					return nil
				}
			}
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	for i, tok := range got {
		if want := fencing.Token(i + 1); tok != want {
			t.Fatalf("acquisition %d got token %d; want %d (tokens %v)", i+1, tok, want, got[max(0, i-3):i+1])
		}
	}
	per := make([]int, clients)
	changes := 0
	for i, c := range who {
		per[c]++
		if i > 0 && who[i-1] != c {
			changes++
		}
	}
	t.Logf("%d acquisitions; per client %v; the holder changed %d times", total, per, changes)
}

func TestFailedTryLockConsumesNoToken(t *testing.T) {
	ctx := t.Context()
	key := newKey(t)
	a, b := fencing.New(rdb, key), fencing.New(rdb, key)
	lockOrFatal(t, a)
	for range 5 {
		if ok, err := b.TryLock(ctx); ok || err != nil {
			t.Fatalf("B.TryLock while A holds = %v, %v; want false, nil", ok, err)
		}
	}
	if got := b.Token(); got != 0 {
		t.Errorf("B.Token() after refused TryLock = %d; want 0", got)
	}
	if got := counterValue(t, key); got != 1 {
		t.Errorf("counter after 1 acquisition and 5 refusals = %d; want 1", got)
	}
	unlockOrFatal(t, a)
	if ok, err := b.TryLock(ctx); !ok || err != nil {
		t.Fatalf("B.TryLock after A unlocked = %v, %v; want true, nil", ok, err)
	}
	if got := b.Token(); got != 2 {
		t.Errorf("B.Token() = %d; want 2", got)
	}
	unlockOrFatal(t, b)
}

func TestLockGivesUp(t *testing.T) {
	key := newKey(t)
	holder := fencing.New(rdb, key)
	lockOrFatal(t, holder)
	defer unlockOrFatal(t, holder)

	fast := fencing.WithRetry(func(int) time.Duration { return time.Millisecond })
	t.Run("tries", func(t *testing.T) {
		err := fencing.New(rdb, key, fast, fencing.WithTries(3)).Lock(t.Context())
		if !errors.Is(err, fencing.ErrNotObtained) {
			t.Errorf("Lock with 3 tries on a held lock = %v; want ErrNotObtained", err)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
		defer cancel()
		err := fencing.New(rdb, key, fast).Lock(ctx)
		if !errors.Is(err, fencing.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Lock past its deadline = %v; want ErrNotObtained joined with DeadlineExceeded", err)
		}
	})
	// The deadline may pass while a request is on the wire: go-redis then
	// reports a socket "i/o timeout", a moment before ctx.Err() is set.
	// Lock must still report the context.
	t.Run("deadline mid-request", func(t *testing.T) {
		m := fencing.New(rdb, key, fast)
		for i := range 100 {
			ctx, cancel := context.WithTimeout(t.Context(), time.Duration(i%20)*50*time.Microsecond)
			err := m.Lock(ctx)
			cancel()
			if !errors.Is(err, fencing.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Lock with a %v deadline = %v; want ErrNotObtained joined with DeadlineExceeded",
					time.Duration(i%20)*50*time.Microsecond, err)
			}
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		err := fencing.New(rdb, key, fast).Lock(ctx)
		if !errors.Is(err, fencing.ErrNotObtained) || !errors.Is(err, context.Canceled) {
			t.Errorf("Lock with a cancelled context = %v; want ErrNotObtained joined with Canceled", err)
		}
	})
	if got := counterValue(t, key); got != 1 {
		t.Errorf("counter after failed Locks = %d; want 1 (only the holder's token)", got)
	}
}

func TestNotHeld(t *testing.T) {
	t.Run("never locked", func(t *testing.T) {
		m := fencing.New(rdb, newKey(t))
		if err := m.Unlock(t.Context()); !errors.Is(err, fencing.ErrNotHeld) {
			t.Errorf("Unlock = %v; want ErrNotHeld", err)
		}
		if err := m.Extend(t.Context(), time.Second); !errors.Is(err, fencing.ErrNotHeld) {
			t.Errorf("Extend = %v; want ErrNotHeld", err)
		}
	})
	t.Run("unlock twice", func(t *testing.T) {
		m := fencing.New(rdb, newKey(t))
		lockOrFatal(t, m)
		unlockOrFatal(t, m)
		if err := m.Unlock(t.Context()); !errors.Is(err, fencing.ErrNotHeld) {
			t.Errorf("second Unlock = %v; want ErrNotHeld", err)
		}
		if got := m.Token(); got != 0 {
			t.Errorf("Token() after Unlock = %d; want 0", got)
		}
		if got := m.Until(); !got.IsZero() {
			t.Errorf("Until() after Unlock = %v; want zero", got)
		}
	})
	t.Run("after expiry", func(t *testing.T) {
		for _, method := range []string{"Unlock", "Extend"} {
			key := newKey(t)
			m := fencing.New(rdb, key, fencing.WithTTL(20*time.Millisecond))
			lockOrFatal(t, m)
			tok := m.Token()
			waitGone(t, key)
			if got := m.Token(); got != tok {
				t.Errorf("Token() after the lease ran out = %d; want %d (it is for the store to refuse)", got, tok)
			}
			var err error
			if method == "Unlock" {
				err = m.Unlock(t.Context())
			} else {
				err = m.Extend(t.Context(), time.Second)
			}
			if !errors.Is(err, fencing.ErrNotHeld) {
				t.Errorf("%s after the lease ran out = %v; want ErrNotHeld", method, err)
			}
			if got := m.Token(); got != 0 {
				t.Errorf("Token() after %s found the lock lost = %d; want 0", method, got)
			}
		}
	})
	t.Run("taken over", func(t *testing.T) {
		key := newKey(t)
		a := fencing.New(rdb, key, fencing.WithTTL(20*time.Millisecond))
		b := fencing.New(rdb, key)
		lockOrFatal(t, a)
		waitGone(t, key)
		lockOrFatal(t, b)
		if err := a.Unlock(t.Context()); !errors.Is(err, fencing.ErrNotHeld) {
			t.Errorf("A.Unlock after B took over = %v; want ErrNotHeld", err)
		}
		if n, err := rdb.Exists(t.Context(), key).Result(); err != nil || n != 1 {
			t.Errorf("EXISTS %q after A's late Unlock = %d, %v; want 1: B's lock must survive", key, n, err)
		}
		unlockOrFatal(t, b)
	})
}

func TestExtendKeepsToken(t *testing.T) {
	key := newKey(t)
	m := fencing.New(rdb, key, fencing.WithTTL(10*time.Second))
	lockOrFatal(t, m)
	tok, until := m.Token(), m.Until()
	if err := m.Extend(t.Context(), time.Minute); err != nil {
		t.Fatalf("Extend = %v", err)
	}
	if got := m.Token(); got != tok {
		t.Errorf("Token() after Extend = %d; want %d", got, tok)
	}
	if got := m.Until(); !got.After(until.Add(50 * time.Second)) {
		t.Errorf("Until() after Extend(1m) = %v; want about a minute after %v", got, until)
	}
	if pttl := rdb.PTTL(t.Context(), key).Val(); pttl < 50*time.Second {
		t.Errorf("PTTL after Extend(1m) = %v; want about 1m", pttl)
	}
	unlockOrFatal(t, m)
}

func TestUnlockWithCancelledContext(t *testing.T) {
	key := newKey(t)
	m := fencing.New(rdb, key)
	lockOrFatal(t, m)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := m.Unlock(ctx); err != nil {
		t.Fatalf("Unlock(cancelled ctx) = %v; want nil", err)
	}
	locktest.CheckGone(t, rdb, key, "after Unlock(cancelled ctx)")
}

func TestUntilNeverOverstatesLease(t *testing.T) {
	key := newKey(t)
	m := fencing.New(rdb, key, fencing.WithTTL(10*time.Second))
	before := time.Now()
	lockOrFatal(t, m)
	after := time.Now()
	until := m.Until()
	if until.Before(before.Add(10*time.Second)) || until.After(after.Add(10*time.Second)) {
		t.Errorf("Until() = %v; want between %v and %v", until, before.Add(10*time.Second), after.Add(10*time.Second))
	}
	unlockOrFatal(t, m)
}

// lossyClient runs every command on the real server but, while lose is set,
// replaces the reply of the acquire script with a network error: the reply
// was lost after the script ran.
type lossyClient struct {
	*redis.Client
	lose atomic.Bool
}

func (c *lossyClient) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	cmd := c.Client.EvalSha(ctx, sha, keys, args...)
	return c.maybeLose(ctx, sha, cmd)
}

func (c *lossyClient) Eval(ctx context.Context, src string, keys []string, args ...any) *redis.Cmd {
	cmd := c.Client.Eval(ctx, src, keys, args...)
	return c.maybeLose(ctx, redis.NewScript(src).Hash(), cmd)
}

func (c *lossyClient) maybeLose(ctx context.Context, sha string, cmd *redis.Cmd) *redis.Cmd {
	if sha != fencing.Scripts["acquire"].Hash() || !c.lose.Load() || cmd.Err() != nil {
		return cmd
	}
	lost := redis.NewCmd(ctx)
	lost.SetErr(io.ErrUnexpectedEOF)
	return lost
}

func TestLostReplyLeavesNoLock(t *testing.T) {
	key := newKey(t)
	c := &lossyClient{Client: rdb}
	c.lose.Store(true)
	m := fencing.New(c, key)
	ok, err := m.TryLock(t.Context())
	if ok || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("TryLock with the reply lost = %v, %v; want false, io.ErrUnexpectedEOF", ok, err)
	}
	if got := counterValue(t, key); got != 1 {
		t.Fatalf("counter = %d; want 1 (the script ran)", got)
	}
	locktest.CheckGone(t, rdb, key, "after TryLock lost its reply")
	if got := m.Token(); got != 0 {
		t.Errorf("Token() after a lost reply = %d; want 0", got)
	}
	c.lose.Store(false)
	lockOrFatal(t, m)
	if got := m.Token(); got != 2 {
		t.Errorf("Token() after a lost reply and a Lock = %d; want 2 (token 1 skipped)", got)
	}
	unlockOrFatal(t, m)
}

func TestHooks(t *testing.T) {
	key := newKey(t)
	var (
		mu     sync.Mutex // protects points
		points []string
		m      *fencing.Mutex
	)
	m = fencing.New(rdb, key, fencing.WithHook(func(_ context.Context, p string) {
		mu.Lock()
		defer mu.Unlock()
		if p == fencing.HookAcquired && m.Token() == 0 {
			p += " (without a token)"
		}
		points = append(points, p)
	}))
	lockOrFatal(t, m)
	if err := m.Extend(t.Context(), time.Second); err != nil {
		t.Fatal(err)
	}
	unlockOrFatal(t, m)
	want := []string{fencing.HookBeforeAcquire, fencing.HookAcquired, fencing.HookBeforeExtend,
		fencing.HookBeforeRelease, fencing.HookReleased}
	mu.Lock()
	defer mu.Unlock()
	if len(points) != len(want) {
		t.Fatalf("hook points = %q; want %q", points, want)
	}
	for i := range want {
		if points[i] != want[i] {
			t.Fatalf("hook points = %q; want %q", points, want)
		}
	}
}

// TestPausedHolderIsFenced parks holder A at HookAcquired, as a process
// pause would, until its lease has run out and B has taken the lock and
// written. A then resumes believing it holds the lock, and writes: the store
// refuses it.
func TestPausedHolderIsFenced(t *testing.T) {
	ctx := t.Context()
	key := newKey(t)
	store := openStore(t)
	acquired, resume := make(chan struct{}), make(chan struct{})
	a := fencing.New(rdb, key, fencing.WithTTL(20*time.Millisecond),
		fencing.WithHook(func(_ context.Context, p string) {
			if p == fencing.HookAcquired {
				close(acquired)
				<-resume // paused
			}
		}))
	b := fencing.New(rdb, key, fencing.WithRetry(func(int) time.Duration { return time.Millisecond }))

	aDone := make(chan error, 1)
	go func() {
		if err := a.Lock(ctx); err != nil {
			aDone <- err
			return
		}
		aDone <- store.Write(ctx, "row", "written by A", a.Token())
	}()
	select {
	case <-acquired:
	case err := <-aDone:
		t.Fatalf("A ended before acquiring: %v", err)
	}
	err := b.Lock(ctx) // waits for A's lease to run out
	if err == nil {
		err = store.Write(ctx, "row", "written by B", b.Token())
	}
	close(resume)
	aErr := <-aDone
	if err != nil {
		t.Fatalf("B: %v", err)
	}
	if !errors.Is(aErr, fencing.ErrStaleToken) {
		t.Errorf("A's late write = %v; want ErrStaleToken", aErr)
	}
	data, last, err := store.Read(ctx, "row")
	if err != nil || data != "written by B" || last != b.Token() {
		t.Errorf("Read = %q, %d, %v; want %q, %d, nil", data, last, err, "written by B", b.Token())
	}
	unlockOrFatal(t, b)
	if err := a.Unlock(ctx); !errors.Is(err, fencing.ErrNotHeld) {
		t.Errorf("A.Unlock = %v; want ErrNotHeld", err)
	}
}

func TestBadInput(t *testing.T) {
	var nilClient *redis.Client
	locktest.RefusesInvalid(t, fencing.ErrInvalid, map[string]*fencing.Mutex{
		"nil client":          fencing.New(nil, "k"),
		"typed nil client":    fencing.New(nilClient, "k"),
		"empty key":           fencing.New(rdb, ""),
		"zero ttl":            fencing.New(rdb, "k", fencing.WithTTL(0)),
		"negative ttl":        fencing.New(rdb, "k", fencing.WithTTL(-time.Second)),
		"sub-millisecond ttl": fencing.New(rdb, "k", fencing.WithTTL(time.Microsecond)),
		"zero Mutex":          &fencing.Mutex{},
		"nil Mutex":           nil,
	}, func(t *testing.T, m *fencing.Mutex) {
		if got := m.Token(); got != 0 {
			t.Errorf("Token() = %d; want 0", got)
		}
		if got := m.Until(); !got.IsZero() {
			t.Errorf("Until() = %v; want zero", got)
		}
	})
	t.Run("extend ttl", func(t *testing.T) {
		m := fencing.New(rdb, newKey(t))
		lockOrFatal(t, m)
		defer unlockOrFatal(t, m)
		for _, ttl := range []time.Duration{0, -time.Second, time.Microsecond} {
			if err := m.Extend(t.Context(), ttl); !errors.Is(err, fencing.ErrInvalid) {
				t.Errorf("Extend(%v) = %v; want ErrInvalid", ttl, err)
			}
		}
	})
}

func TestCounterKey(t *testing.T) {
	tests := []struct {
		key, want string
		invalid   bool
	}{
		{key: "orders", want: "{orders}:fence"},
		{key: "{orders}:lock", want: "{orders}:lock:fence"},
		{key: "x{y}z{w}", want: "x{y}z{w}:fence"},
		{key: "a{b", want: "{a{b}:fence"},
		{key: "a}b", want: keyslot.Base("a}b") + ":fence"},
		{key: "a{}b", want: keyslot.Base("a{}b") + ":fence"},
		{key: "", invalid: true},
	}
	for _, tt := range tests {
		got, err := fencing.CounterKey(tt.key)
		if tt.invalid {
			if !errors.Is(err, fencing.ErrInvalid) {
				t.Errorf("CounterKey(%q) = %q, %v; want ErrInvalid", tt.key, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("CounterKey(%q) = %q, %v; want %q", tt.key, got, err, tt.want)
		}
		if ks, cs := keyslot.Slot(tt.key), keyslot.Slot(got); ks != cs {
			t.Errorf("slot(%q) = %d but slot(%q) = %d; want equal", tt.key, ks, got, cs)
		}
	}
}

func TestScriptsLoad(t *testing.T) {
	ctx := t.Context()
	for name, s := range fencing.Scripts {
		sha, err := rdb.ScriptLoad(ctx, fencing.Sources[name]).Result()
		if err != nil {
			t.Errorf("SCRIPT LOAD %s: %v", name, err)
			continue
		}
		if sha != s.Hash() {
			t.Errorf("SCRIPT LOAD %s = %s; want %s", name, sha, s.Hash())
		}
		if ok := rdb.ScriptExists(ctx, sha).Val(); len(ok) != 1 || !ok[0] {
			t.Errorf("SCRIPT EXISTS %s = %v; want [true]", name, ok)
		}
	}
}

// lockOrFatal locks m with a test-sized timeout.
func lockOrFatal(t *testing.T, m *fencing.Mutex) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.Lock(ctx); err != nil {
		t.Fatalf("Lock(%q) = %v", m.Key(), err)
	}
}

func unlockOrFatal(t *testing.T, m *fencing.Mutex) {
	t.Helper()
	if err := m.Unlock(context.Background()); err != nil {
		t.Fatalf("Unlock(%q) = %v", m.Key(), err)
	}
}

// waitGone waits until key no longer exists (its lease ran out), failing
// the test after 10s.
func waitGone(t *testing.T, key string) {
	t.Helper()
	locktest.WaitGone(t, rdb, key, 10*time.Second)
}

// TestCorruptCounter: a counter that is not a positive integer makes
// TryLock fail with the server's error, leaving no lock and the counter as
// it was.
func TestCorruptCounter(t *testing.T) {
	for _, bad := range []string{"not a number", "-5"} {
		t.Run(bad, func(t *testing.T) {
			ctx := t.Context()
			key := newKey(t)
			counter, _ := fencing.CounterKey(key)
			if err := rdb.Set(ctx, counter, bad, 0).Err(); err != nil {
				t.Fatal(err)
			}
			m := fencing.New(rdb, key)
			if ok, err := m.TryLock(ctx); ok || err == nil {
				t.Errorf("TryLock with counter %q = %v, %v; want false and an error", bad, ok, err)
			}
			locktest.CheckGone(t, rdb, key, "after a failed acquire")
			if got := rdb.Get(ctx, counter).Val(); got != bad {
				t.Errorf("counter = %q after a failed acquire; want %q", got, bad)
			}
		})
	}
}
