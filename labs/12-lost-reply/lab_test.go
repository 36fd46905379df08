package lab12_test

import (
	"testing"
	"time"

	"github.com/locklab/locklab/internal/faultproxy"
	"github.com/locklab/locklab/internal/keyslot"
	"github.com/locklab/locklab/labs"
	lab12 "github.com/locklab/locklab/labs/12-lost-reply"
)

func TestMain(m *testing.M) { labs.Main(m) }

const title = "Lab 12 (a reply lost, a command sent twice)"

// lease is long: nothing in this lab waits for a lease to run out, and
// nothing must expire by accident while the test drives the clients. A
// lock left held by mistake would keep B out for all of it.
const lease = 10 * time.Second

var (
	// counted is lab 06's fix, naive.Counted: a count per owner in a Redis
	// hash, owner-checked scripts, counting every run. labs.Reentrant,
	// reentrant.Mutex, gives every call an id and a receipt.
	counted  = labs.Counted
	exercise = labs.Register("lab12-exercise", func(e *labs.Env) labs.Locker {
		return labs.NewCallPath(lab12.NewExercise(e.Redis(0), e.Key, e.TTL))
	})
	_ = labs.RegisterError(lab12.ErrNotHeld, labs.LabelNotHeld)
)

// lostReplies: A, the order service, talks to Redis through a proxy and
// runs go-redis on its default options, as services do: a command whose
// reply is lost is sent again. The proxy loses three replies, one at a
// time: of reserveStock's Unlock while processOrder holds the lock too, of
// reserveStock's Lock, and of processOrder's last Unlock. After each,
// B (another request, on a direct connection) must find the lock as A's
// calls left it: taken while A is inside, free once A has unlocked. At the
// end every other key the lock left behind must expire and sit in the
// lock key's hash slot.
func lostReplies(s *labs.Scene, impl *labs.Impl) {
	s.TTL = lease
	l := &lossyLink{s: s, p: faultproxy.Start(s.T(), s.Node().Addr())}
	l.sent = l.p.Count(faultproxy.Match{Key: s.Key})
	a := s.Client("A", impl, labs.Addrs(l.p.Addr()), labs.GoRedisDefaults())
	b := s.Client("B", impl)

	a.Note("a first order: Lock and Unlock, which load the scripts")
	s.Must(a.Lock())
	s.Must(a.Unlock())

	for _, part := range []func(*labs.Scene, *lossyLink, *labs.Client, *labs.Client) bool{
		innerUnlockSentTwice, innerLockSentTwice, lastUnlockSentTwice,
	} {
		if !part(s, l, a, b) {
			return
		}
	}
	leftBehind(s)
}

// innerUnlockSentTwice: A holds order 1001 twice, and the reply to
// reserveStock's Unlock is lost. processOrder still holds the lock.
func innerUnlockSentTwice(s *labs.Scene, l *lossyLink, a, b *labs.Client) bool {
	a.Note("processOrder locks order 1001, and reserveStock locks it too")
	s.Must(a.Lock())
	a.Enter()
	s.Must(a.Lock())
	s.ShowKey()
	l.loseNextReply()
	err := a.Unlock()
	l.sentAgain()
	if !unlocked(s, err, "reserveStock's Unlock") {
		return false
	}
	s.ShowKey()
	ok, err := b.TryLock()
	s.Must(err)
	if ok {
		s.Violation("B took order 1001 while processOrder still held it: reserveStock's Unlock ran twice (its reply was lost, and go-redis sent it again) and took back processOrder's hold too")
		b.Enter()
		b.Write("ship order 1001")
		b.Exit()
		b.Release()
		return false
	}
	a.Write("ship order 1001")
	a.Exit()
	if !unlocked(s, a.Unlock(), "processOrder's Unlock") {
		return false
	}
	return free(s, b, "A unlocked as often as it locked")
}

// innerLockSentTwice: the reply to reserveStock's Lock is lost. A then
// unlocks as often as it locked, and the lock must be free.
func innerLockSentTwice(s *labs.Scene, l *lossyLink, a, b *labs.Client) bool {
	a.Note("processOrder locks order 1001, and reserveStock locks it too")
	s.Must(a.Lock())
	a.Enter()
	l.loseNextReply()
	err := a.Lock()
	l.sentAgain()
	s.Must(err)
	s.ShowKey()
	if !unlocked(s, a.Unlock(), "reserveStock's Unlock") {
		return false
	}
	a.Write("ship order 1001")
	a.Exit()
	if !unlocked(s, a.Unlock(), "processOrder's Unlock") {
		return false
	}
	s.ShowKey()
	return free(s, b, "A unlocked as often as it locked, but reserveStock's Lock ran twice (its reply was lost, and go-redis sent it again) and counted twice")
}

// lastUnlockSentTwice: the reply to processOrder's only Unlock is lost.
// Its first run released the lock; the second must say so too. Then A
// unlocks once more than it locked, which must be refused.
func lastUnlockSentTwice(s *labs.Scene, l *lossyLink, a, b *labs.Client) bool {
	a.Note("processOrder locks order 1001, once")
	s.Must(a.Lock())
	a.Enter()
	a.Write("ship order 1001")
	a.Exit()
	l.loseNextReply()
	err := a.Unlock()
	l.sentAgain()
	if labs.NotHeld(err) {
		s.Violation("processOrder's Unlock answered \"not held\" although processOrder held the lock: its first run released it, the reply was lost, and the second run found nothing to release. A second run must answer what the first one did")
		return false
	}
	s.Must(err)
	s.ShowKey()
	if !free(s, b, "processOrder's Unlock, sent twice, left it held") {
		return false
	}
	// One Unlock more than Locks: it must still be refused.
	a.Note("one Unlock too many")
	if err := a.Unlock(); err == nil {
		s.Violation("A's extra Unlock succeeded: an Unlock that says \"done\" when A holds nothing also hides a lease that ran out under A")
		return false
	} else if !labs.NotHeld(err) {
		s.Must(err)
	}
	return true
}

// unlocked checks an Unlock of A's that must release one of A's holds: a
// "not held" answer is a violation, any other error fails the test.
func unlocked(s *labs.Scene, err error, what string) bool {
	s.T().Helper()
	if labs.NotHeld(err) {
		s.Violation("%s answered \"not held\" although A held the lock: a call before it took back a hold it should not have", what)
		return false
	}
	s.Must(err)
	return true
}

// free checks that nobody holds the lock: B must take it at once (and
// gives it back).
func free(s *labs.Scene, b *labs.Client, why string) bool {
	s.T().Helper()
	ok, err := b.TryLock()
	s.Must(err)
	if !ok {
		s.Violation("B was refused order 1001, which nobody holds: %s. The lock stays taken until its lease runs out (%v)", why, lease)
		return false
	}
	b.Release()
	return true
}

// leftBehind looks at every key but the lock's (SCAN, never KEYS): each
// must expire, and sit in the lock key's hash slot, where a Redis Cluster
// lets one script touch both.
func leftBehind(s *labs.Scene) {
	s.T().Helper()
	keys, err := scanAll(s)
	s.Must(err)
	slot := keyslot.Slot(s.Key)
	for _, k := range keys {
		ms, err := s.Redis().Do(s.Ctx, "PTTL", k).Int64()
		s.Must(err)
		switch {
		case ms == -1:
			s.Violation("%s has no TTL: every call leaves a key that is never deleted, and they pile up in Redis for ever", k)
			return
		case keyslot.Slot(k) != slot:
			s.Violation("%s is not in %s's hash slot: in Redis Cluster a script may touch the keys of one slot only, and this one fails with CROSSSLOT", k, s.Key)
			return
		}
	}
	s.Note("%s besides the lock key, each in its hash slot and expiring", labs.Plural(len(keys), "key"))
}

// scanAll returns every key on the first node but the lock key.
func scanAll(s *labs.Scene) ([]string, error) {
	var keys []string
	iter := s.Redis().Scan(s.Ctx, 0, "*", 100).Iterator()
	for iter.Next(s.Ctx) {
		if k := iter.Val(); k != s.Key {
			keys = append(keys, k)
		}
	}
	return keys, iter.Err()
}

// lossyLink is A's way to Redis: the rig's fault proxy, which loses the
// reply to one command at a time, and counts every command on the lock
// key.
type lossyLink struct {
	s      *labs.Scene
	p      *faultproxy.Proxy
	sent   *faultproxy.Rule // counts A's commands on the key
	drop   *faultproxy.Rule // loses the next reply
	before int              // sent before the drop was armed
}

// loseNextReply arms the proxy to lose the reply to A's next command on
// the lock key.
func (l *lossyLink) loseNextReply() {
	l.before = l.sent.Hits()
	l.drop = l.p.DropReply(faultproxy.Match{Key: l.s.Key}, 1)
	l.s.Fault("the proxy will lose the reply to A's next command: it lets it through, then cuts A's connection")
}

// sentAgain checks that the fault happened: the proxy lost the reply, and
// go-redis sent the command again. Otherwise the lab tests nothing, and
// fails saying so.
func (l *lossyLink) sentAgain() {
	l.s.T().Helper()
	defer l.drop.Remove()
	if l.drop.Hits() != 1 {
		l.s.Fatalf("labs: harness went blind: the proxy lost no reply to A (A sent nothing on %s)", l.s.Key)
	}
	n := l.sent.Hits() - l.before
	if n < 2 {
		l.s.Fatalf("labs: harness went blind: A sent its command once, and not again after the proxy lost its reply (go-redis's default options retry)")
	}
	l.s.Note("reply lost; go-redis sent the command again: Redis ran it %s", labs.Plural(n, "time"))
}

func TestLab12_BrokenCountsEveryRun(t *testing.T) {
	labs.Broken(t, title, lostReplies, counted)
}

func TestLab12_FixedCountsEachCallOnce(t *testing.T) {
	labs.Fixed(t, title, lostReplies, labs.Reentrant)
}

func TestLab12_Exercise(t *testing.T) {
	labs.Exercise(t, title, lostReplies, exercise)
}
