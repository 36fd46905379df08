package labs

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locklab/locklab/internal/history"
	"github.com/locklab/locklab/reentrant"
)

// The contract of a lock, said once for every lab whose exercise is a
// lock. A lab's scenario checks its lesson; the contract checks
// everything else a lock promises, so that an exercise that passes its
// lesson by breaking another promise (ignoring its TTL or its context,
// dropping an error, keeping its holds in the Go process) is red too. A
// green exercise then means a right fix, including fixes nobody listed.

// LockContract describes how a lab's lock is set up for its contract
// ([ExerciseLockContract]); the zero value is one plain Redis server.
type LockContract struct {
	// Nodes is how many independent nodes the lock spans (a Redlock: 5);
	// 0 means one. Its key is checked on every node.
	Nodes int
	// Setup prepares the servers before any client starts, for a lock
	// that needs more than a server (lab 07's replica).
	Setup func(s *Scene)
	// NotHeld says whether err is the lock's "not held" answer; nil means
	// [NotHeld] (a sentinel registered with [LabelNotHeld]). A lab whose
	// lock has no such sentinel accepts any error.
	NotHeld func(error) bool
	// Reentrant marks a lock whose owner travels in the context (lab
	// 06's and 12's): one owner may hold it through two Exercise values,
	// and its count must live in Redis.
	Reentrant bool
	// Renews marks a lock that keeps its lease alive while held (a
	// watchdog): the contract does not wait for its lease to run out.
	Renews bool
	// NodeRefusalIsNo marks a lock over several nodes for which a node
	// that refuses counts as a node that said no (Redlock): when every
	// node refuses, TryLock may answer (false, nil).
	NodeRefusalIsNo bool
	// Waiting marks a lab whose lesson is how a client waits (lab 10): a
	// waiter must not poll (it sends at most maxWaitCommands commands a
	// second while the lock is held) and must get a released lock at once
	// (within maxWakeDelay).
	Waiting bool
}

const (
	// contractTTL is the lease the contract asks for: a value no lock
	// has as a default, so a lock that ignores the one it is given shows.
	contractTTL = 7300 * time.Millisecond
	// contractShortTTL is the lease of a holder whose lease the contract
	// lets run out.
	contractShortTTL = 200 * time.Millisecond
	// contractLongTTL is the lease of every other holder: long, so that
	// nothing expires by accident on a loaded machine.
	contractLongTTL = 20 * time.Second
	// answerWithin bounds a TryLock, and an Unlock: they answer at once
	// (a few milliseconds here); 2s is a wide margin on a loaded machine.
	answerWithin = 2 * time.Second
	// contractWait is how long a Lock that must give up is willing to
	// wait, and ctxSlack how much longer it may take to return.
	contractWait = 300 * time.Millisecond
	ctxSlack     = 2 * time.Second
	// stillWaiting is how long a Lock that must wait is watched not to
	// return.
	stillWaiting = 300 * time.Millisecond
	// handOver bounds how long a waiter takes to get a released lock: a
	// polling lock tries every few ms, a Redlock every 10-50ms.
	handOver = 3 * time.Second
	// maxWaitCommands is the most commands a waiting lab's waiter may send
	// in waitWindow while the lock is held: a subscribe, a try, a wait
	// bounded by the lease (2s) and a few spare. A poll every 5ms sends
	// 200.
	maxWaitCommands = 10
	waitWindow      = time.Second
	// maxWakeDelay bounds how long a waiting lab's waiter takes to get a
	// released lock: a release message arrives in a millisecond or so; a
	// waiter that sleeps instead of listening takes up to its sleep.
	maxWakeDelay = 300 * time.Millisecond
	// refusalCommand makes a server refuse every write (NOREPLICAS): it
	// wants more replicas than any scene has.
	refusalReplicas = "9"
)

// ExerciseLockContract runs the lock contract on the lab's exercise:
//
//	func TestLab03_ExerciseContract(t *testing.T) {
//		labs.ExerciseLockContract(t, title, exercise, labs.LockContract{})
//	}
//
// Built with -tags exercise, it demands that the exercise keeps every
// promise of a lock: one holder at a time, in Redis and not in the
// process (a client in another process is refused too); the TTL it is
// given is the key's PTTL; TryLock answers at once; Lock waits for a held
// lock, gets it when released, and honours its context; Unlock of a lock
// not held (never taken, released already, or expired and taken by
// another) returns the not-held error and leaves the other's lock alone
// (read through keyspace notifications); an error from Redis (a server
// that refuses writes) surfaces; no key is left after Unlock. Without the
// tag it skips: the untouched exercise is the lesson's to catch, and
// [FixedLockContract] proves the contract passable.
func ExerciseLockContract(t *testing.T, title string, impl *Impl, c LockContract) {
	t.Helper()
	if !exerciseMode {
		t.Skipf("the contract of a lock runs on your exercise with -tags exercise (make exercise LAB=%s)", labNumber())
	}
	run(t, title+" contract", "exercise", lockContract(c), impl, wantSafe, runOpts{spread: true, exercise: true, timeout: exerciseTimeout})
}

// FixedLockContract runs the lock contract on a lab's reference lock, and
// demands it kept: the contract can be passed.
func FixedLockContract(t *testing.T, title string, impl *Impl, c LockContract) {
	t.Helper()
	run(t, title+" contract", "fixed", lockContract(c), impl, wantSafe, runOpts{})
}

// contractKeys are the contract's keys on every node, for reading them.
type contractNodes struct {
	s       *Scene
	clients []*redis.Client
}

func newContractNodes(s *Scene, n int) *contractNodes {
	nodes := s.Nodes(max(n, 1))
	if n <= 1 {
		nodes = nodes[:1]
	}
	cn := &contractNodes{s: s}
	for _, node := range nodes {
		c := node.Client()
		s.t.Cleanup(func() { _ = c.Close() })
		cn.clients = append(cn.clients, c)
	}
	return cn
}

// pttls returns the key's PTTL on every node: -2 where it is absent.
func (cn *contractNodes) pttls(key string) []int64 {
	out := make([]int64, len(cn.clients))
	for i, c := range cn.clients {
		ms, err := c.Do(cn.s.Ctx, "PTTL", key).Int64()
		cn.s.Must(err)
		out[i] = ms
	}
	return out
}

// held reports on how many nodes the key exists.
func (cn *contractNodes) held(key string) int {
	n := 0
	for _, ms := range cn.pttls(key) {
		if ms != -2 {
			n++
		}
	}
	return n
}

// refuse makes every node refuse writes (on is true) or accept them again.
func (cn *contractNodes) refuse(on bool) {
	v := "0"
	if on {
		v = refusalReplicas
	}
	for _, c := range cn.clients {
		cn.s.Must(c.ConfigSet(cn.s.Ctx, "min-replicas-to-write", v).Err())
	}
}

// commands returns how many commands the first node has processed.
func (cn *contractNodes) commands() int64 {
	info, err := cn.clients[0].Info(cn.s.Ctx, "stats").Result()
	cn.s.Must(err)
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_commands_processed:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			cn.s.Must(err)
			return n
		}
	}
	cn.s.Fatalf("labs: INFO stats has no total_commands_processed")
	return 0
}

// contractAs runs a lock operation ("lock", "trylock", "unlock") as the
// owner given after it ("lock <owner>"), for a lock whose owner travels in
// the context: a second Exercise value for the same call path.
var contractAs = RegisterOp("contract-as", func(ctx context.Context, l *Local, arg string) (string, error) {
	op, owner, _ := strings.Cut(arg, " ")
	ctx = reentrant.WithOwner(ctx, reentrant.Owner(owner))
	switch op {
	case "lock":
		return "", l.Lock(ctx)
	case "unlock":
		return "", l.Unlock(ctx)
	}
	return "", fmt.Errorf("labs: contract-as %q: want lock or unlock", arg)
})

// lockContract is the contract as a scenario: its parts one after the
// other, each on a key of its own, stopping at the first broken promise.
func lockContract(c LockContract) Scenario {
	return func(s *Scene, impl *Impl) {
		if c.Setup != nil {
			c.Setup(s)
		}
		cn := newContractNodes(s, c.Nodes)
		notHeld := c.NotHeld
		if notHeld == nil {
			notHeld = NotHeld
		}
		base := s.Key
		parts := []struct {
			name string
			run  func(*Scene, *Impl, *contractNodes, LockContract, func(error) bool) bool
			skip bool
		}{
			{"one holder, in Redis; Lock waits and honours its context", contractOneHolder, false},
			{"the TTL it is given is the TTL in Redis", contractTTLPart, false},
			{"an expired holder's Unlock", contractExpired, c.Renews},
			{"a renewal renews to the TTL it is given", contractRenewal, !c.Renews},
			{"one owner, two Exercise values", contractReentrant, !c.Reentrant},
			{"errors from Redis surface", contractRefused, false},
		}
		n := 0
		for _, p := range parts {
			if p.skip {
				continue
			}
			n++
			s.Key = fmt.Sprintf("%s/contract/%d", base, n)
			s.Note("contract %d: %s (%s)", n, p.name, s.Key)
			if !p.run(s, impl, cn, c, notHeld) {
				return
			}
		}
		s.Key = base
	}
}

// violated records a broken promise of the contract and says to stop.
func violated(s *Scene, format string, args ...any) bool {
	s.Violation("contract: "+format, args...)
	return false
}

// tryWithin runs TryLock on c and waits for it at most answerWithin.
func tryWithin(s *Scene, c *Client, holder string) (ok bool, err error, answered bool) {
	call := c.Go("trylock", "")
	if !call.Within(answerWithin) {
		violated(s, "%s's TryLock had not answered after %v while %s held the lock: TryLock answers at once, it never waits for the lock", c.Name(), answerWithin, holder)
		return false, nil, false
	}
	out, err := call.Result()
	return out == "true", err, true
}

// unlockWithin runs Unlock on c and waits for it at most answerWithin.
func unlockWithin(s *Scene, c *Client) (error, bool) {
	call := c.Go("unlock", "")
	if !call.Within(answerWithin) {
		violated(s, "%s's Unlock had not returned after %v: Unlock answers at once", c.Name(), answerWithin)
		return nil, false
	}
	return call.Err(), true
}

// releases has c unlock a lock it holds and checks that the key is gone
// from every node.
func releases(s *Scene, cn *contractNodes, c *Client) bool {
	err, ok := unlockWithin(s, c)
	if !ok {
		return false
	}
	if err != nil {
		return violated(s, "%s's Unlock of the lock it holds returned %v; want nil", c.Name(), describeErr(err))
	}
	if n := cn.held(s.Key); n > 0 {
		return violated(s, "%s's Unlock returned nil, but %s is still in Redis (on %s): no key is left after Unlock", c.Name(), s.Key, Plural(n, "node"))
	}
	return true
}

// contractOneHolder: A holds the lock. B (this process, its own Exercise
// value) and P (another process) are refused at once; B's Lock with a
// short context gives up in time and leaves A's lock as it was; P's Lock
// waits, and gets the lock once A releases it. Unlock twice, or by a
// client that never locked, is "not held".
func contractOneHolder(s *Scene, impl *Impl, cn *contractNodes, c LockContract, notHeld func(error) bool) bool {
	a := s.Client("A", impl, TTL(contractLongTTL))
	b := s.Client("B", impl, TTL(contractLongTTL))
	p := s.Process("P", impl, TTL(contractLongTTL))
	if err := a.Lock(); err != nil {
		return violated(s, "A's Lock of a free lock returned %v", describeErr(err))
	}
	if cn.held(s.Key) == 0 {
		return violated(s, "A's Lock returned nil, but %s is not in Redis: the hold must live in Redis, where other processes see it", s.Key)
	}
	if ok, err, answered := tryWithin(s, b, "A"); !answered {
		return false
	} else if err != nil || ok {
		return violated(s, "B's TryLock while A held the lock answered (%v, %v); want (false, nil): one holder at a time", ok, errText(err))
	}
	if ok, err, answered := tryWithin(s, p, "A"); !answered {
		return false
	} else if ok {
		return violated(s, "P, in another process, took the lock A holds: the hold lives in A's process, not in Redis (every instance of a service is its own process)")
	} else if err != nil {
		return violated(s, "P's TryLock while A held the lock returned %v; want (false, nil)", describeErr(err))
	}

	// B is willing to wait contractWait: its Lock must give up then, and
	// leave A's lock alone.
	var watch *keyWatch
	if !c.Renews { // a watchdog renews A's lock meanwhile
		watch = s.watchKey(s.Key)
	}
	start := time.Now()
	call := b.Go("lock", contractWait.String())
	if !call.Within(contractWait + ctxSlack) {
		return violated(s, "B's Lock, whose context ended after %v, had not returned after %v: Lock must honour its context", contractWait, contractWait+ctxSlack)
	}
	if err := call.Err(); err == nil {
		return violated(s, "B's Lock returned nil while A held the lock: Lock waits until the lock is free, or its context ends (then it returns an error)")
	} else if took := time.Since(start); took < contractWait/2 {
		return violated(s, "B's Lock returned %v after %v, though its context had %v left: Lock waits for a held lock until its context ends", describeErr(err), took.Round(time.Millisecond), contractWait)
	}
	if watch != nil && !watch.leftAlone("A's lock", "B's Lock, which gave up,") {
		return false
	}

	// P waits with no deadline of its own: it must still be waiting while
	// A holds the lock, and get it when A releases it.
	wait := p.Go("lock", "")
	if wait.Within(stillWaiting) {
		return violated(s, "P's Lock returned (%v) while A held the lock: Lock waits until the lock is free", errText(wait.Err()))
	}
	if c.Waiting {
		before := cn.commands()
		time.Sleep(waitWindow) // measured: how hard the waiter works
		sent := cn.commands() - before - 1
		if sent > maxWaitCommands {
			return violated(s, "P sent Redis %d commands in %v while it waited for A's lock: a waiter that polls floods the server (and still finds the lock free late); wait for the release message instead", sent, waitWindow)
		}
		s.Note("P sent Redis %d commands in %v while it waited", max(sent, 0), waitWindow)
	}
	err, ok := unlockWithin(s, a)
	if !ok {
		return false
	}
	released := time.Now()
	if err != nil {
		return violated(s, "A's Unlock of the lock it holds returned %v; want nil", describeErr(err))
	}
	limit := handOver
	if c.Waiting {
		limit = maxWakeDelay
	}
	if !wait.Within(limit) {
		if c.Waiting {
			return violated(s, "P, in another process, had not got the lock %v after A released it: a waiter that sleeps between tries, or that only its own process can wake, leaves the lock free while it sleeps; it must wake on the release (a message through Redis)", limit)
		}
		return violated(s, "P had not got the lock %v after A released it: a waiting Lock takes a free lock", limit)
	}
	if err := wait.Err(); err != nil {
		return violated(s, "P's Lock returned %v after A released the lock; want nil", describeErr(err))
	}
	if c.Waiting {
		s.Note("P got the lock %d ms after A released it", time.Since(released).Milliseconds())
	}
	if err, ok := unlockWithin(s, a); !ok {
		return false
	} else if !notHeld(err) {
		return violated(s, "A's second Unlock returned %s, while P held the lock: Unlock of a lock not held returns the not-held error", errText(err))
	}
	if !releases(s, cn, p) {
		return false
	}
	if err, ok := unlockWithin(s, b); !ok {
		return false
	} else if !notHeld(err) {
		return violated(s, "B's Unlock of a lock it never took returned %s: Unlock of a lock not held returns the not-held error", errText(err))
	}
	return true
}

// contractTTLPart: A locks with a TTL of contractTTL; the key's PTTL,
// read back at once, must be that TTL less the time gone by.
func contractTTLPart(s *Scene, impl *Impl, cn *contractNodes, c LockContract, notHeld func(error) bool) bool {
	a := s.Client("A", impl, TTL(contractTTL))
	start := time.Now()
	if err := a.Lock(); err != nil {
		return violated(s, "A's Lock of a free lock returned %v", describeErr(err))
	}
	pttls := cn.pttls(s.Key)
	gone := time.Since(start)
	for i, ms := range pttls {
		where := ""
		if len(pttls) > 1 {
			where = fmt.Sprintf(" on node %d", i)
		}
		switch {
		case ms == -2 && len(pttls) > 1:
			continue // a Redlock need not hold every node
		case ms == -2:
			return violated(s, "A's Lock returned nil, but %s is not in Redis", s.Key)
		case ms == -1:
			return violated(s, "A's lock was given a TTL of %v, but %s has no TTL in Redis%s (PTTL -1): a holder that dies holds it forever", contractTTL, s.Key, where)
		case ms > contractTTL.Milliseconds() || ms < (contractTTL-gone).Milliseconds()-50:
			return violated(s, "A's lock was given a TTL of %v, but %s has PTTL %d ms in Redis%s, %v after A asked: the TTL it is given must be the TTL in Redis", contractTTL, s.Key, ms, where, gone.Round(time.Millisecond))
		}
	}
	s.Note("%s: PTTL %v ms, %v after A asked for a TTL of %v", s.Key, pttls, gone.Round(time.Millisecond), contractTTL)
	return releases(s, cn, a)
}

// contractExpired: A's lease runs out and B takes the lock. A's Unlock
// must answer "not held" and leave B's lock alone: not deleted, not
// written back, not renewed (keyspace notifications).
func contractExpired(s *Scene, impl *Impl, cn *contractNodes, c LockContract, notHeld func(error) bool) bool {
	a := s.Client("A", impl, TTL(contractShortTTL))
	b := s.Client("B", impl, TTL(contractLongTTL))
	if err := a.Lock(); err != nil {
		return violated(s, "A's Lock of a free lock returned %v", describeErr(err))
	}
	s.Eventually(s.Key+" is gone from every node", func() (bool, error) { return cn.held(s.Key) == 0, nil })
	s.Fault("%s expired (A's lease of %v)", s.Key, contractShortTTL)
	// Bounded: a Lock that waits on something outside Redis (a hold kept
	// in A's process as well) is named here, not at the scene's deadline.
	call := b.Go("lock", handOver.String())
	if !call.Within(handOver + ctxSlack) {
		return violated(s, "B's Lock of an expired lock (%s is gone from Redis: A's lease ran out) had not returned after %v: Lock waits on something that is not in Redis (a hold kept in A's process as well?)", s.Key, handOver+ctxSlack)
	}
	if err := call.Err(); err != nil {
		return violated(s, "B's Lock of an expired lock (%s is gone from Redis) returned %v within %v, though the lock is free in Redis: Lock waits on something that is not in Redis (a hold kept in A's process as well?)", s.Key, describeErr(err), handOver)
	}
	before := cn.pttls(s.Key)
	watch := s.watchKey(s.Key)
	err, ok := unlockWithin(s, a)
	if !ok {
		return false
	}
	if !notHeld(err) {
		return violated(s, "A's Unlock, after its lease ran out and B took the lock, returned %s: Unlock of a lock not held returns the not-held error", errText(err))
	}
	if !watch.leftAlone("B's lock", "A's Unlock") {
		return false
	}
	after := cn.pttls(s.Key)
	for i := range before {
		if after[i] > before[i] || (before[i] >= 0 && after[i] < 0) {
			return violated(s, "A's Unlock changed B's lock: PTTL %v before, %v after", before, after)
		}
	}
	return releases(s, cn, b)
}

// renewTTL is the lease of the renewal part, and renewWatch how long the
// part reads the key's PTTL while the lock renews it (every third of the
// lease, for the labs' watchdogs).
const (
	renewTTL   = 1500 * time.Millisecond
	renewWatch = 2 * time.Second
)

// contractRenewal: A holds a lock that renews its lease; read every 20ms
// for renewWatch, the key's PTTL is never more than the TTL A was given. A
// renewal that missed its turn on a loaded machine is not judged here.
func contractRenewal(s *Scene, impl *Impl, cn *contractNodes, c LockContract, notHeld func(error) bool) bool {
	a := s.Client("A", impl, TTL(renewTTL))
	if err := a.Lock(); err != nil {
		return violated(s, "A's Lock of a free lock returned %v", describeErr(err))
	}
	most := int64(-2)
	for end := time.Now().Add(renewWatch); time.Now().Before(end); {
		for i, ms := range cn.pttls(s.Key) {
			if ms == -1 || ms > renewTTL.Milliseconds() {
				return violated(s, "A's lock was given a TTL of %v, but its renewal set %s's PTTL to %d ms in Redis (node %d): a renewal renews to the TTL it is given", renewTTL, s.Key, ms, i)
			}
			most = max(most, ms)
		}
		select {
		case <-s.Ctx.Done():
			return true
		case <-time.After(20 * time.Millisecond):
		}
	}
	s.Note("%s: PTTL at most %d ms over %v, for a TTL of %v", s.Key, most, renewWatch, renewTTL)
	return releases(s, cn, a)
}

// contractReentrant: A holds the lock; A2, a second Exercise value for the
// same owner (the same call path, in another instance), locks it again
// and unlocks once. The lock is A's still: a count kept in the Go value,
// not in Redis, frees it.
func contractReentrant(s *Scene, impl *Impl, cn *contractNodes, c LockContract, notHeld func(error) bool) bool {
	a := s.Client("A", impl, TTL(contractLongTTL))
	a2 := s.Client("A2", impl, TTL(contractLongTTL))
	b := s.Client("B", impl, TTL(contractLongTTL))
	if err := a.Lock(); err != nil {
		return violated(s, "A's Lock of a free lock returned %v", describeErr(err))
	}
	owner := lastToken(s, "A")
	if owner == "" {
		s.Fatalf("labs: the contract's reentrant part needs the lock's owner as its Token (labs.NewCallPath)")
	}
	if _, err := a2.Do(contractAs, "lock "+owner); err != nil {
		return violated(s, "A's owner, locking again through a second Exercise value, got %v: the owner holds the lock, whichever value it calls", describeErr(err))
	}
	if _, err := a2.Do(contractAs, "unlock "+owner); err != nil {
		return violated(s, "A's owner, unlocking once through the second Exercise value, got %v", describeErr(err))
	}
	if ok, err, answered := tryWithin(s, b, "A"); !answered {
		return false
	} else if ok || err != nil {
		return violated(s, "B's TryLock answered (%v, %v) after A's owner locked twice (through two Exercise values) and unlocked once: it still holds the lock once. The count lives in the Go value, not in Redis", ok, errText(err))
	}
	return releases(s, cn, a)
}

// contractRefused: Redis refuses every write (min-replicas-to-write set
// higher than the replicas it has: NOREPLICAS). TryLock must return the
// error, and B's Unlock of the lock it holds must too (the lock is still
// B's: neither nil nor "not held").
func contractRefused(s *Scene, impl *Impl, cn *contractNodes, c LockContract, notHeld func(error) bool) bool {
	b := s.Client("B", impl, TTL(contractLongTTL))
	if err := b.Lock(); err != nil {
		return violated(s, "B's Lock of a free lock returned %v", describeErr(err))
	}
	holdKey, freeKey := s.Key, s.Key+"/free"
	s.Key = freeKey
	a := s.Client("A", impl, TTL(contractLongTTL)) // on a free key
	s.Key = holdKey
	cn.refuse(true)
	s.Fault("Redis refuses every write (CONFIG SET min-replicas-to-write %s: NOREPLICAS)", refusalReplicas)
	refused := true
	defer func() {
		if refused {
			cn.refuse(false)
		}
	}()
	ok, err, answered := tryWithin(s, a, "nobody")
	if !answered {
		return false
	}
	switch {
	case ok:
		return violated(s, "A's TryLock answered true while Redis refused every write: the lock is not in Redis")
	case err == nil && !c.NodeRefusalIsNo:
		return violated(s, "A's TryLock answered (false, nil) while Redis refused its write (NOREPLICAS): (false, nil) means taken by someone else; an error from Redis must surface")
	}
	if n := cn.held(freeKey); n > 0 {
		return violated(s, "A's refused TryLock left %s in Redis", freeKey)
	}
	if !c.NodeRefusalIsNo {
		// A's Lock must not take the refusal for "taken" and wait on
		// until its context ends: it returns Redis's error.
		call := a.Go("lock", contractWait.String())
		if !call.Within(contractWait + ctxSlack) {
			return violated(s, "A's Lock, whose context ended after %v, had not returned after %v while Redis refused its write: Lock must honour its context", contractWait, contractWait+ctxSlack)
		}
		switch err := call.Err(); {
		case err == nil:
			return violated(s, "A's Lock returned nil while Redis refused every write: the lock is not in Redis")
		case !strings.Contains(err.Error(), "NOREPLICAS"):
			return violated(s, "A's Lock, while Redis refused its write (NOREPLICAS), returned %q: Redis's error was dropped (the refusal taken for a held lock, or retried until the context ended); an error from Redis must surface", err.Error())
		}
	}
	if !c.NodeRefusalIsNo {
		err, ok := unlockWithin(s, b)
		if !ok {
			return false
		}
		switch {
		case err == nil:
			return violated(s, "B's Unlock returned nil while Redis refused its write (NOREPLICAS): B's lock is still in Redis and B was told it was released; an error from Redis must surface")
		case c.NotHeld == nil && notHeld(err):
			return violated(s, "B's Unlock returned the not-held error while Redis refused its write (NOREPLICAS): B's lock is still B's; an error from Redis must surface as itself")
		}
	}
	cn.refuse(false)
	refused = false
	s.Fault("Redis accepts writes again")
	// B tries again. A lock that forgot its hold when the first Unlock
	// failed answers "not held"; its key must then run out by itself.
	err, ok = unlockWithin(s, b)
	if !ok {
		return false
	}
	switch {
	case err != nil && !notHeld(err):
		return violated(s, "B's Unlock, once Redis accepted writes again, returned %v; want nil", describeErr(err))
	case err == nil && cn.held(s.Key) > 0:
		return violated(s, "B's Unlock returned nil, but %s is still in Redis: no key is left after Unlock", s.Key)
	}
	for _, ms := range cn.pttls(s.Key) {
		if ms == -1 {
			return violated(s, "%s is left in Redis with no TTL after B's Unlock", s.Key)
		}
	}
	return true
}

// lastToken returns the token of client's last acquired lock.
func lastToken(s *Scene, client string) string {
	tok := ""
	for _, e := range s.Events() {
		if e.Client == client && e.Kind == history.Acquire && e.OK {
			tok = e.Token
		}
	}
	return tok
}

// errText is err on the timeline, or "nil".
func errText(err error) string {
	if err == nil {
		return "nil"
	}
	return describeErr(err)
}

// leaseHorizon is the longest TTL [Scene.ExpireLeases] takes for a
// lease: a lock's lease is seconds, a minute at most; a key kept for
// longer (a marker that an event was handled, kept for a day) is data.
const leaseHorizon = 10 * time.Minute

// ExpireLeases makes every lease on the first node run out now: each key
// whose TTL is at most leaseHorizon expires (PEXPIRE 1), as it would for
// a client paused past its lease (a long GC pause, a frozen VM). It is
// the fault of a scenario in which a lock around the code must not be
// what keeps it right, because a lock can fail. It notes the keys on the
// timeline, with who (whose pause), and returns how many expired.
func (s *Scene) ExpireLeases(who string) int {
	s.t.Helper()
	r := s.Redis()
	var gone []string
	iter := r.Scan(s.Ctx, 0, "*", 100).Iterator()
	for iter.Next(s.Ctx) {
		key := iter.Val()
		ms, err := r.Do(s.Ctx, "PTTL", key).Int64()
		s.Must(err)
		if ms > 0 && ms <= leaseHorizon.Milliseconds() {
			s.Must(r.PExpire(s.Ctx, key, time.Millisecond).Err())
			gone = append(gone, key)
		}
	}
	s.Must(iter.Err())
	if len(gone) == 0 {
		return 0
	}
	for _, key := range gone {
		s.Eventually(key+" is gone", func() (bool, error) {
			n, err := r.Exists(s.Ctx, key).Result()
			return n == 0, err
		})
	}
	s.Fault("%s paused past every lease: %s expired", who, strings.Join(gone, ", "))
	return len(gone)
}

// RefuseWrites makes the first node refuse every write (on) or accept
// writes again, and says so on the timeline: min-replicas-to-write set
// higher than the replicas it has, so that every write is answered
// NOREPLICAS, as a replica answers READONLY or an ACL NOPERM. It is how
// the contracts check that an error from Redis surfaces.
func (s *Scene) RefuseWrites(on bool) {
	s.t.Helper()
	v := "0"
	if on {
		v = refusalReplicas
	}
	s.Must(s.Redis().ConfigSet(s.Ctx, "min-replicas-to-write", v).Err())
	if on {
		s.Fault("Redis refuses every write (CONFIG SET min-replicas-to-write %s: NOREPLICAS)", refusalReplicas)
	} else {
		s.Fault("Redis accepts writes again")
	}
}

// lockContractScenario is the lock contract as a scenario, for a test that
// runs it on a lock the contract must catch ([Run], [Caught]).
func lockContractScenario(c LockContract) Scenario { return lockContract(c) }
