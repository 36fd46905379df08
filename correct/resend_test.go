package correct_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/correct"
	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/internal/leakcheck"
	"github.com/locklab/locklab/internal/locktest"
	"github.com/locklab/locklab/internal/preflight"
	"github.com/locklab/locklab/internal/rig"
)

// The tests in this file lose replies for real (internal/faultproxy) to a
// client on go-redis's default options, which sends the command again, and
// check that every operation still answers as it would have.

// userClient is a go-redis client on its default options (retries on),
// through p, closed in Cleanup.
func userClient(t *testing.T, p *faultproxy.Proxy) *redis.Client {
	t.Helper()
	c := redis.NewClient(rig.UserOptions(p.Addr()))
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// warm loads every script and runs a Lock and Unlock on a throwaway key
// through c, so that the server check has run: a test that loses "the next
// SET" then loses the one it means, and a command held in the network runs
// when it lands, as EVALSHA of a loaded script does, instead of meeting
// NOSCRIPT with nobody left to send EVAL.
func warm(t *testing.T, c correct.Client) {
	t.Helper()
	for name, s := range correct.Scripts {
		if err := s.Script.Load(testContext(t), c).Err(); err != nil {
			t.Fatalf("SCRIPT LOAD %s: %v", name, err)
		}
	}
	locktest.Warm(t, testContext(t), correct.New(c, newKey(t)))
}

// checkOursThenUnlock checks that the key holds m's token, as Lock said,
// and then unlocks m.
func checkOursThenUnlock(t *testing.T, ctx context.Context, m *correct.Mutex) {
	t.Helper()
	if got := newClient(t).Get(ctx, m.Key()).Val(); got != m.Token() || got == "" {
		t.Errorf("key holds %q; Token() = %q; want the same", got, m.Token())
	}
	if err := m.Unlock(ctx); err != nil {
		t.Errorf("Unlock = %v", err)
	}
}

// TestAcquireSentTwiceIsOurs: the acquisition (take.lua) lands, its reply
// is lost, go-redis sends it again. The second run finds our own token;
// Lock must know the
// lock is ours. (It used to answer "taken", forget its token and wait a
// whole TTL for its own key.)
func TestAcquireSentTwiceIsOurs(t *testing.T) {
	p, c := locktest.ThroughProxy(t, redisAddr)
	warm(t, c)
	key := newKey(t)
	m := correct.New(c, key, correct.WithTTL(time.Minute))
	ctx, cancel := context.WithTimeout(testContext(t), 5*time.Second) // far less than the TTL
	defer cancel()
	locktest.LoseReply(t, p, faultproxy.Match{Script: takeScript, Key: key}, "Lock", func() error { return m.Lock(ctx) })
	checkOursThenUnlock(t, ctx, m)
}

// TestAcquireSentTwiceAfterARefusalIsOurs: the same for the tries after
// a refusal: a polling Lock is refused once, the holder leaves, and the
// reply of the second try's take.lua is lost.
func TestAcquireSentTwiceAfterARefusalIsOurs(t *testing.T) {
	p, c := locktest.ThroughProxy(t, redisAddr)
	warm(t, c)
	key := newKey(t)
	ctx, cancel := context.WithTimeout(testContext(t), 5*time.Second) // far less than the TTL
	defer cancel()
	holder := correct.New(newClient(t), key)
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	var lost *faultproxy.Rule
	delay := func(n int) time.Duration {
		if n == 1 { // refused once: the holder leaves, the next SET's reply is lost
			if err := holder.Unlock(ctx); err != nil {
				t.Error(err)
			}
			lost = p.DropReply(faultproxy.Match{Script: takeScript, Key: key}, 1)
		}
		return time.Millisecond
	}
	m := correct.New(c, key, correct.WithTTL(time.Minute), correct.WithRetry(delay))
	if err := m.Lock(ctx); err != nil {
		t.Fatalf("Lock whose second try's reply was lost = %v; want nil", err)
	}
	if lost == nil || lost.Hits() != 1 {
		t.Fatalf("the second try's reply was not lost")
	}
	checkOursThenUnlock(t, ctx, m)
}

// TestReleaseSentTwiceAnswersTheSame: Unlock's script runs, its reply is
// lost, go-redis sends it again; the key is gone by then. Unlock must
// still report the release, not ErrNotHeld.
func TestReleaseSentTwiceAnswersTheSame(t *testing.T) {
	p, c := locktest.ThroughProxy(t, redisAddr)
	warm(t, c)
	key := newKey(t)
	m := correct.New(c, key)
	ctx := testContext(t)
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	locktest.LoseReply(t, p, faultproxy.Match{Command: "EVALSHA", Key: key}, "Unlock", func() error { return m.Unlock(ctx) })
	locktest.CheckGone(t, newClient(t), key, "after Unlock")
}

// TestHandOffSentTwiceHandsOverOnce: A hands the lock to W1, the reply is
// lost, go-redis sends the release again. The second run must not pop W2
// or rewrite W1's key with W2's TTL. (It did: the key got W2's 300ms
// while W1 counted on 10s, and W2 took the lock under W1.)
func TestHandOffSentTwiceHandsOverOnce(t *testing.T) {
	leakcheck.Guard(t)
	ctx := testContext(t)
	p := faultproxy.Start(t, redisAddr)
	direct := newClient(t)
	key := newKey(t)
	party := func(ttl time.Duration) (*correct.Mutex, <-chan struct{}) {
		c := userClient(t, p)
		n, err := correct.NewNotifier(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = n.Close() })
		hook, queued := locktest.Signal(correct.HookQueued)
		return correct.New(c, key, correct.WithNotifier(n), correct.WithTTL(ttl), correct.WithHook(hook)), queued
	}
	a, _ := party(10 * time.Second)
	w1, q1 := party(10 * time.Second)
	w2, q2 := party(300 * time.Millisecond)
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	got1, got2 := make(chan error, 1), make(chan error, 1)
	go func() { got1 <- w1.Lock(ctx) }()
	<-q1
	go func() { got2 <- w2.Lock(ctx) }()
	<-q2
	lost := p.DropReply(faultproxy.Match{Command: "EVALSHA", Key: key}, 1)
	if err := a.Unlock(ctx); err != nil {
		t.Fatalf("A's Unlock (hand-off) whose reply was lost = %v; want nil", err)
	}
	if err := <-got1; err != nil {
		t.Fatal(err)
	}
	if lost.Hits() != 1 {
		t.Fatalf("the hand-off's reply was not lost (%d hits)", lost.Hits())
	}
	if pttl := direct.PTTL(ctx, key).Val(); pttl <= time.Second {
		t.Errorf("W1 holds the lock with a 10s lease, but its key expires in %v (W2's TTL)", pttl)
	}
	select {
	case err := <-got2:
		t.Fatalf("W2's Lock returned (%v) while W1 holds the lock", err)
	default:
	}
	if err := w1.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got2; err != nil {
		t.Fatal(err)
	}
	if err := w2.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestEnqueueSentTwiceQueuesOnce: the waiter's join lands, its reply is
// lost, go-redis sends it again. The waiter must be queued once: a second
// copy would be handed the lock when nobody waits for it.
func TestEnqueueSentTwiceQueuesOnce(t *testing.T) {
	leakcheck.Guard(t)
	ctx := testContext(t)
	p, c := locktest.ThroughProxy(t, redisAddr)
	warm(t, c)
	n := notifierOn(t, c)
	key := newKey(t)
	holder := correct.New(newClient(t), key)
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	lost := p.DropReply(faultproxy.Match{Script: joinScript, Key: key}, 1)
	w, got := queueWaiter(t, ctx, c, key, correct.WithNotifier(n))
	if lost.Hits() != 1 {
		t.Fatalf("the join's reply was not lost (%d hits)", lost.Hits())
	}
	if q := newClient(t).LRange(ctx, queueOf(key), 0, -1).Val(); len(q) != 1 {
		t.Fatalf("queue after a join sent twice = %q; want the waiter once", q)
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	checkQueueGone(t, newClient(t), key)
}

// TestStaleEntryOfALiveProcessCostsOneHop: a waiter gives up while its join
// is still in the network, and its give-up's release (which takes its
// token out of the queue, and marks it released so that a join landing
// later queues nothing) is cut off for longer; the join lands after it
// left, so its token sits in the queue, and its process's Notifier is
// alive (PUBLISH counts it). Five such entries stand before a live waiter.
// The release must reach the live waiter within a few hops, not after five
// TTLs. (It took 5.1s at TTL 1s: each stale entry held the lock for a TTL.)
func TestStaleEntryOfALiveProcessCostsOneHop(t *testing.T) {
	leakcheck.Guard(t)
	ctx := testContext(t)
	const ttl = time.Second
	_, c := locktest.ThroughProxy(t, redisAddr)
	warm(t, c)
	n := notifierOn(t, c)
	key := newKey(t)
	holder := correct.New(newClient(t), key, correct.WithTTL(time.Minute))
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	// The quitters' client honours its context's deadline (go-redis on
	// defaults waits out its 3s read timeout first, and no client stops a
	// read for a cancellation without a deadline), so each gives up at
	// once. They reach Redis through a network of their own, where their
	// releases are held until the end (so all five give up together, each
	// after its release's own bound, 2s); their Notifier's network is c's.
	qp := faultproxy.Start(t, redisAddr)
	qc := locktest.Client(t, qp.Addr())
	warm(t, qc)
	joins := qp.Hold(faultproxy.Match{Script: joinScript, Key: key}, 5)
	releases := qp.Hold(faultproxy.Match{Script: releaseScript, Key: key}, 0)
	t.Cleanup(releases.Remove)
	qctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	got := make(chan error, 5)
	for range 5 {
		quitter := correct.New(qc, key, correct.WithNotifier(n), correct.WithTTL(ttl))
		go func() { got <- quitter.Lock(qctx) }()
	}
	for range 5 {
		if err := <-got; !errors.Is(err, correct.ErrNotObtained) {
			t.Fatalf("quitter's Lock = %v; want ErrNotObtained", err)
		}
	}
	if joins.Hits() != 5 {
		t.Fatalf("%d joins held; want 5", joins.Hits())
	}
	joins.Remove() // the joins land after the quitters left
	waitQueueLen(t, newClient(t), key, 5)
	live, lgot := queueWaiter(t, ctx, c, key, correct.WithNotifier(n), correct.WithTTL(ttl))
	// Each stale entry costs one hop (a script run by the Notifier): well
	// under 250ms; the bug cost a TTL each.
	locktest.HandedOnWithin(t, ctx, holder, live, lgot, ttl/4, "behind 5 stale entries")
}

// waitQueueLen waits until key's queue holds n tokens.
func waitQueueLen(t *testing.T, c *redis.Client, key string, n int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for c.LLen(context.Background(), queueOf(key)).Val() != n {
		if time.Now().After(deadline) {
			t.Fatalf("queue of %s: %d entries; want %d", key, c.LLen(context.Background(), queueOf(key)).Val(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestStaleHandOffMessageIsNotALease: a hand-off reaches W's Notifier late
// (its subscription stalled, as a frozen process's would be), after W's
// key expired and X took the lock. W's own look finds itself passed by and
// queues again; the late message must then not pass for a hand-off. (W
// took it for one and reported the lock held with ~300ms left while X held
// it: 6 of 12 trials.)
func TestStaleHandOffMessageIsNotALease(t *testing.T) {
	leakcheck.Guard(t)
	ctx := testContext(t)
	const ttl = 200 * time.Millisecond
	p, wc := locktest.ThroughProxy(t, redisAddr) // W's network
	warm(t, wc)
	n := notifierOn(t, wc)
	key := newKey(t)
	direct := newClient(t)
	a := correct.New(direct, key, correct.WithTTL(10*time.Second))
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	w, got := queueWaiter(t, ctx, wc, key, correct.WithNotifier(n), correct.WithTTL(ttl))
	// W freezes, as a process under SIGSTOP or a long GC pause: nothing it
	// sends or is sent moves, though its connections stay open (PUBLISH
	// still counts its subscription).
	p.Blackhole()
	if err := a.Unlock(ctx); err != nil { // handed to W; the message waits
		t.Fatal(err)
	}
	waitGone(t, direct, key) // W's 200ms lease runs out unused
	x := correct.New(direct, key, correct.WithTTL(10*time.Second))
	if err := x.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	// W wakes: its held look finds X holding and W no longer queued, and
	// the stale hand-off message arrives.
	p.Heal()
	waitQueueLen(t, direct, key, 1) // W queued again, under a new token
	select {
	case err := <-got:
		t.Fatalf("W's Lock returned %v (Token %q) while X holds the lock (key %q)", err, w.Token(), direct.Get(ctx, key).Val())
	case <-time.After(4 * ttl):
	}
	if err := x.Unlock(ctx); err != nil { // now W gets it, for real
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	checkHolds(t, ctx, direct, key, w, "W's")
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestNotifierNoticesASilentDeath: the Notifier's subscription goes
// half-open (nothing arrives, nothing errors). Within a few seconds it
// must subscribe again, and its passed-by waiter must get the lock then,
// not at its next look a quarter TTL later.
func TestNotifierNoticesASilentDeath(t *testing.T) {
	leakcheck.Guard(t)
	ctx := testContext(t)
	const ttl = 40 * time.Second // a look every 10s: longer than the test waits
	p, wc := locktest.ThroughProxy(t, redisAddr)
	n := notifierOn(t, wc)
	key := newKey(t)
	direct := newClient(t)
	a := correct.New(direct, key, correct.WithTTL(ttl))
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	w, got := queueWaiter(t, ctx, wc, key, correct.WithNotifier(n), correct.WithTTL(ttl))
	p.Stall(faultproxy.Match{Command: "SUBSCRIBE"}) // never released: a dead peer
	if err := a.Unlock(ctx); err != nil {           // handed to W, whose message never comes
		t.Fatal(err)
	}
	start := time.Now()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(ttl / 4):
		t.Fatal("W did not get the lock before its own look: the Notifier never noticed its dead subscription")
	}
	// Silence for pingEvery (1s), then a ping unanswered for 2s: about 3s.
	if took := time.Since(start); took > 8*time.Second {
		t.Errorf("W got the lock %v after the hand-off; want about 3s (ping, then resubscribe)", took)
	}
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestQueueErrorJoinsNotObtained: Lock's context ends while the join of the
// queue is in the network. The error must be ErrNotObtained joined with
// the context's, as Lock's doc promises. (It was a bare "correct: queue
// "k": context deadline exceeded".)
func TestQueueErrorJoinsNotObtained(t *testing.T) {
	leakcheck.Guard(t)
	ctx := testContext(t)
	p := faultproxy.Start(t, redisAddr)
	c := locktest.Client(t, p.Addr()) // honours ctx deadlines
	warm(t, c)
	n := notifierOn(t, c)
	key := newKey(t)
	direct := newClient(t)
	holder := correct.New(direct, key)
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	held := p.Hold(faultproxy.Match{Script: joinScript, Key: key}, 1)
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	err := correct.New(c, key, correct.WithNotifier(n)).Lock(short)
	if !errors.Is(err, correct.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Lock whose join was held past its deadline = %v; want ErrNotObtained joined with DeadlineExceeded", err)
	}
	// The held join lands after the waiter left, and after its give-up's
	// release, which marked its token released: it queues nothing.
	held.Remove()
	if err := held.Answered(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if q := direct.LRange(ctx, queueOf(key), 0, -1).Val(); len(q) != 0 {
		t.Errorf("queue after the waiter's join landed late = %q; want it empty", q)
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	waitGone(t, direct, key)
}

// TestQueueKeyExpires: a waiter that dies (its process gone) leaves its
// token in the queue; the queue must expire on its own, not stay forever.
func TestQueueKeyExpires(t *testing.T) {
	ctx := testContext(t)
	n, c := newNotifier(t)
	key := newKey(t)
	holder := correct.New(c, key)
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	defer holder.Unlock(ctx)
	wctx, cancel := context.WithCancel(ctx)
	_, got := queueWaiter(t, wctx, c, key, correct.WithNotifier(n), correct.WithTTL(3*time.Second))
	pttl := c.PTTL(ctx, queueOf(key)).Val()
	cancel()
	<-got
	if pttl <= 0 || pttl > 2*3*time.Second {
		t.Errorf("queue PTTL while a 3s waiter waits = %v; want a TTL of at most 6s", pttl)
	}
}

// TestUnfitServerIsRefused: a server that evicts keys under memory
// pressure, and a user that may not run scripts, are refused by Lock with
// an error naming the cause, before any key is written.
func TestUnfitServerIsRefused(t *testing.T) {
	ctx := testContext(t)
	t.Run("eviction", func(t *testing.T) {
		node := rig.Start(t, rig.WithArgs("--maxmemory", "10mb", "--maxmemory-policy", "allkeys-lru"))
		c := node.Client()
		preflight.Forget()
		key := newKey(t)
		err := correct.New(c, key).Lock(ctx)
		if err == nil || !strings.Contains(err.Error(), "maxmemory-policy allkeys-lru") || !errors.Is(err, correct.ErrEviction) {
			t.Fatalf("Lock on an evicting server = %v; want an error naming maxmemory-policy allkeys-lru", err)
		}
		locktest.CheckGone(t, c, key, "after the refused Lock")
		// A managed service forbids CONFIG, and allows INFO: the check
		// still sees.
		if err := c.Do(ctx, "ACL", "SETUSER", "noconfig", "on", ">pw", "~*", "&*", "+@all", "-config").Err(); err != nil {
			t.Fatal(err)
		}
		preflight.Forget()
		noConfig := node.Client(func(o *redis.Options) { o.Username, o.Password = "noconfig", "pw" })
		if err := correct.New(noConfig, key).Lock(ctx); !errors.Is(err, correct.ErrEviction) {
			t.Fatalf("Lock on an evicting server, as a user without CONFIG = %v; want ErrEviction", err)
		}
		m := correct.New(c, key, correct.WithEvictionCheck(false))
		if err := m.Lock(ctx); err != nil {
			t.Fatalf("Lock with WithEvictionCheck(false) = %v; want nil", err)
		}
		if err := m.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("no scripting", func(t *testing.T) {
		node := rig.Start(t)
		admin := node.Client()
		if err := admin.Do(ctx, "ACL", "SETUSER", "setonly", "on", ">pw", "~*", "-@all", "+set", "+get", "+del", "+config").Err(); err != nil {
			t.Fatal(err)
		}
		c := node.Client(func(o *redis.Options) { o.Username, o.Password = "setonly", "pw" })
		preflight.Forget()
		key := newKey(t)
		err := correct.New(c, key).Lock(ctx)
		if err == nil || !errors.Is(err, correct.ErrNoScripting) || !strings.Contains(err.Error(), "evalsha") {
			t.Fatalf("Lock as a user who may not run scripts = %v; want an error naming the missing EVALSHA right", err)
		}
		locktest.CheckGone(t, admin, key, "after the refused Lock (a lock it could never release)")
	})
}

// The SHA-1s of the scripts the proxy's rules pick: take.lua, an
// attempt's acquisition; enqueue.lua, a waiter's join (a Lock with a
// Notifier sends take.lua first, so "the next script on the key" is not
// the join); release.lua.
var (
	takeScript    = correct.Scripts["take.lua"].Script.Hash()
	joinScript    = correct.Scripts["enqueue.lua"].Script.Hash()
	releaseScript = correct.Scripts["release.lua"].Script.Hash()
)
