package lab13_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/locklab/locklab/etcdlock"
	"github.com/locklab/locklab/fencing"
	"github.com/locklab/locklab/internal/history"
	"github.com/locklab/locklab/internal/rig"
	"github.com/locklab/locklab/internal/sysclient"
	"github.com/locklab/locklab/labs"
	lab09 "github.com/locklab/locklab/labs/09-fencing"
	lab13 "github.com/locklab/locklab/labs/13-consensus"
	"github.com/locklab/locklab/zklock"
)

// Every scenario waits for a lease, a session or an election: all ten run
// at once, and the lab takes about as long as its slowest scenario (part
// 3's, which waits out gRPC's 10s keep-alive floor).
func TestMain(m *testing.M) { labs.Main(m, labs.WaitingLab(10)) }

const (
	titlePause     = "Lab 13 (etcd, paused holder)"
	titlePartition = "Lab 13 (ZooKeeper, partitioned holder)"
	titleLeader    = "Lab 13 (etcd, paused leader)"
	titleFailover  = "Lab 13 (failover: Redis, etcd, ZooKeeper)"
)

const (
	// lease is the etcd lease, or the ZooKeeper session timeout, of the
	// client the scenario freezes or cuts off: the scenario waits about
	// this long. etcd grants no lease under about 2s with its default
	// election timeout (1s): its minimum is 1.5 election timeouts.
	lease = 2 * time.Second
	// long is the lease (or session timeout) of every other client: far
	// longer than any run, so that nothing ends unless the scenario waits
	// for it.
	long = 30 * time.Second
	// failoverWait is how long B waits for the lock after a failover, in
	// part 4: on Redis it gets the lock at once; on etcd and ZooKeeper it
	// must not get it at all while A holds it.
	failoverWait = 2 * time.Second
	// order is the row (part 2) that the workers write.
	order = "order:1001"
)

// Scene parameters handed to every client.
const (
	etcdParam = "etcd" // etcd endpoints, comma-separated
	zkParam   = "zk"   // ZooKeeper servers, comma-separated
	dbParam   = "db"   // the SQLite file of part 2's order table
)

// What the workers write.
const (
	dataA = "packed by A"
	dataB = "shipped by B"
)

// etcdWorker is a worker of the order service on etcd: its lock, and the
// write it makes to order 1001's status in etcd, through a KV that the
// scenario can stop right before a write leaves the worker.
type etcdWorker struct {
	*etcdlock.Mutex
	kv    clientv3.KV
	write func(ctx context.Context, kv clientv3.KV, m *etcdlock.Mutex, status string) error
}

// unguarded is the order service's first write: the worker checks its
// lease, then writes.
func unguarded(ctx context.Context, kv clientv3.KV, m *etcdlock.Mutex, status string) error {
	select {
	case <-m.Done():
		return fmt.Errorf("%w: the lease is gone", lab13.ErrRefused)
	default:
	}
	_, err := kv.Put(ctx, lab13.OrderKey, status)
	return err
}

// guarded makes the write conditional on the worker's claim still being
// the one that holds the lock, in one transaction: etcd checks and writes
// as one step, when the write arrives.
func guarded(ctx context.Context, kv clientv3.KV, m *etcdlock.Mutex, status string) error {
	resp, err := kv.Txn(ctx).If(m.IsOwner()).Then(clientv3.OpPut(lab13.OrderKey, status)).Commit()
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		return fmt.Errorf("%w: its claim is gone", lab13.ErrRefused)
	}
	return nil
}

func newEtcdWorker(write func(context.Context, clientv3.KV, *etcdlock.Mutex, string) error) func(e *labs.Env) labs.Locker {
	return func(e *labs.Env) labs.Locker {
		c, err := sysclient.Etcd(strings.Split(e.Param(etcdParam, ""), ",")...)
		if err != nil {
			return labs.Failing(err)
		}
		e.Defer(func() { _ = c.Close() })
		m := etcdlock.New(c, e.Key, etcdlock.WithTTL(e.TTL), etcdlock.WithHook(e.Hook))
		return &etcdWorker{Mutex: m, kv: lab13.Hooked(c, e.Hook), write: write}
	}
}

// zkWorker is a worker on ZooKeeper: its lock, and the store it writes
// order rows to, with the lock's czxid as the fencing token.
type zkWorker struct {
	*zklock.Mutex
	session *zklock.Session
	open    func(ctx context.Context, path string) (store, error)
}

// store is what a zkWorker writes order rows to: package fencing's Store
// (it refuses stale tokens) or lab 09's UncheckedStore (it does not).
type store = lab09.Store

func newZKWorker(open func(ctx context.Context, path string) (store, error)) func(e *labs.Env) labs.Locker {
	return func(e *labs.Env) labs.Locker {
		s, err := zklock.Connect(strings.Split(e.Param(zkParam, ""), ","), e.TTL)
		if err != nil {
			return labs.Failing(err)
		}
		e.Defer(s.Close)
		return &zkWorker{Mutex: zklock.New(s, "/locks/order-1001", zklock.WithHook(e.Hook)), session: s, open: open}
	}
}

var (
	// Part 1: the paused holder on etcd.
	etcdUnguarded = labs.Register("lab13-etcd-unguarded", newEtcdWorker(unguarded))
	etcdGuarded   = labs.Register("lab13-etcd-guarded", newEtcdWorker(guarded))
	exercise      = labs.Register("lab13-exercise", newEtcdWorker(lab13.WriteOrder))

	// Part 2: the partitioned holder on ZooKeeper.
	zkUnchecked = labs.Register("lab13-zk-unchecked", newZKWorker(func(ctx context.Context, path string) (store, error) {
		return lab09.OpenUnchecked(ctx, path)
	}))
	zkFenced = labs.Register("lab13-zk-fenced", newZKWorker(func(ctx context.Context, path string) (store, error) {
		return fencing.OpenStore(ctx, path)
	}))

	// Part 4: lab 07's lock on Redis (labs.Correct), beside the two
	// consensus locks.
	redisLock = labs.Correct

	_ = labs.RegisterError(etcdlock.ErrNotHeld, "not held")
	_ = labs.RegisterError(zklock.ErrNotHeld, "not held")
	_ = labs.RegisterError(lab13.ErrRefused, "refused")
	_ = labs.RegisterError(syscall.ECONNREFUSED, "connection refused")
)

// Operations the clients run, in whichever process hosts them.
var (
	// writeOrder writes arg as order 1001's status, through the worker's
	// store, and records the store's verdict.
	writeOrder = labs.RegisterOp("write-order", func(ctx context.Context, l *labs.Local, data string) (string, error) {
		var err error
		switch w := l.Locker.(type) {
		case *etcdWorker:
			err = w.write(ctx, w.kv, w.Mutex, data)
			if err != nil && !errors.Is(err, lab13.ErrRefused) && ctx.Err() == nil {
				// A refusal the caller cannot tell from a failure: read
				// etcd, and name it if the write was refused.
				if resp, gerr := w.kv.Get(ctx, lab13.OrderKey); gerr == nil && (len(resp.Kvs) == 0 || string(resp.Kvs[0].Value) != data) {
					l.Write(data, false)
					l.Record(history.Event{Kind: history.Violation, Text: fmt.Sprintf("%s's WriteOrder returned %q for a write etcd did not take: a refused write must return an error wrapping lab13.ErrRefused, so that its caller can tell a refusal from a failure", l.Name, err)})
					return "refused", nil
				}
			}
			if err == nil {
				// The effect, not the worker's word: a write is accepted
				// when etcd holds what it wrote.
				resp, gerr := w.kv.Get(ctx, lab13.OrderKey)
				if gerr != nil {
					return "", gerr
				}
				if len(resp.Kvs) == 0 || string(resp.Kvs[0].Value) != data {
					got := "(none)"
					if len(resp.Kvs) > 0 {
						got = fmt.Sprintf("%q", resp.Kvs[0].Value)
					}
					l.Write(data, false)
					l.Record(history.Event{Kind: history.Violation, Text: fmt.Sprintf("%s's WriteOrder returned nil, but etcd did not write %q (%s in etcd = %s): only the worker said the write succeeded. A write etcd refused must return an error wrapping ErrRefused (check the transaction's Succeeded)", l.Name, data, lab13.OrderKey, got)})
					return "refused", nil
				}
			}
		case *zkWorker:
			var st store
			if st, err = w.open(ctx, l.Env.Param(dbParam, "")); err != nil {
				return "", err
			}
			defer st.Close()
			if err = st.Write(ctx, order, data, fencing.Token(w.Fence())); errors.Is(err, fencing.ErrStaleToken) {
				err = fmt.Errorf("%w: %w", lab13.ErrRefused, err)
			}
		default:
			return "", fmt.Errorf("lab13: client %s's lock is a %T, not a worker", l.Name, l.Locker)
		}
		if answer, ok := l.Answer(data, err, lab13.ErrRefused); ok {
			return answer, nil
		}
		return "", fmt.Errorf("%s's write: %w (a refused write must return an error wrapping lab13.ErrRefused)", l.Name, err)
	})
	// readOrder returns order 1001's row, read through the worker's store,
	// as "<last token> <data>". It records nothing.
	readOrder = labs.RegisterOp("read-order", func(ctx context.Context, l *labs.Local, _ string) (string, error) {
		w, ok := l.Locker.(*zkWorker)
		if !ok {
			return "", fmt.Errorf("lab13: client %s's lock is a %T, not a ZooKeeper worker", l.Name, l.Locker)
		}
		return lab09.ReadRow(ctx, w.open, l.Env.Param(dbParam, ""), order)
	})
	// unlockBack runs Unlock until the lock's server answers: a client
	// back from a partition, or whose member was frozen, must reconnect
	// first (and a ZooKeeper client learn that its session expired). It is
	// what a caller that retries Unlock on transport errors sees; only the
	// answer goes on the timeline.
	unlockBack = labs.RegisterOp("unlock-when-back", func(ctx context.Context, l *labs.Local, _ string) (string, error) {
		for {
			err := l.Locker.Unlock(ctx)
			notHeld := errors.Is(err, zklock.ErrNotHeld) || errors.Is(err, etcdlock.ErrNotHeld)
			if err == nil || notHeld {
				e := history.Event{Kind: history.Release, OK: err == nil}
				if notHeld {
					e.Text = "not held"
				}
				l.Record(e)
				return "", nil
			}
			select {
			case <-ctx.Done():
				return "", err
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
	// claimOp returns where the worker's hold lives: its claim key in etcd
	// or its child node in ZooKeeper.
	claimOp = labs.RegisterOp("claim", func(_ context.Context, l *labs.Local, _ string) (string, error) {
		switch w := l.Locker.(type) {
		case *etcdWorker:
			return w.Claim(), nil
		case *zkWorker:
			return w.Node(), nil
		}
		return "", fmt.Errorf("lab13: client %s's lock is a %T", l.Name, l.Locker)
	})
	// toldOp waits until the worker's lock says it is lost (Done), for at
	// most arg, and says so in the worker's lane, with how long it took.
	toldOp = labs.RegisterOp("told", func(ctx context.Context, l *labs.Local, arg string) (string, error) {
		d, err := time.ParseDuration(arg)
		if err != nil {
			return "", err
		}
		done, ok := l.Locker.(interface{ Done() <-chan struct{} })
		if !ok {
			return "", fmt.Errorf("lab13: client %s's lock has no Done", l.Name)
		}
		start := time.Now()
		select {
		case <-done.Done():
			l.Note("told: Done closed %d ms later", time.Since(start).Milliseconds())
			return "told", nil
		case <-time.After(d):
			l.Note("Done still open after %v", d)
			return "not told", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
)

// startEtcd starts an etcd cluster of n members for the scene and hands
// its endpoints to every client made after it.
func startEtcd(s *labs.Scene, n int) (*rig.Etcd, *clientv3.Client) {
	s.T().Helper()
	e := rig.StartEtcd(s.ServerT(), n)
	s.Params[etcdParam] = strings.Join(e.Endpoints(), ",")
	c, err := sysclient.Etcd(e.Endpoints()...)
	s.Must(err)
	s.T().Cleanup(func() { _ = c.Close() })
	return e, c
}

// waitKeyGone waits until key is gone from etcd and records why.
func waitKeyGone(s *labs.Scene, c *clientv3.Client, key, why string) {
	s.T().Helper()
	s.WaitFor(key+" is gone", func() (bool, error) {
		resp, err := c.Get(s.Ctx, key)
		if err != nil {
			return false, err
		}
		return len(resp.Kvs) == 0, nil
	}, "%s", why)
}

// waitNewLeader waits until leader, asked of the cluster, names a member
// other than old, and records the election.
func waitNewLeader[M comparable](s *labs.Scene, old M, leader func(context.Context) (M, error), elected string) {
	s.T().Helper()
	s.WaitFor("a new leader", func() (bool, error) {
		l, err := leader(s.Ctx)
		return err == nil && l != old, nil
	}, "%s", elected)
}

// showOrder notes order 1001's status as etcd has it.
func showOrder(s *labs.Scene, c *clientv3.Client) {
	s.T().Helper()
	resp, err := c.Get(s.Ctx, lab13.OrderKey)
	s.Must(err)
	status := "(none)"
	if len(resp.Kvs) > 0 {
		status = fmt.Sprintf("%q", resp.Kvs[0].Value)
	}
	s.Note("%s in etcd = %s", lab13.OrderKey, status)
}

// Part 1: the paused holder of labs 03 and 09, on etcd.
//
// A holds the lock and is about to write order 1001's status when its
// process freezes (SIGSTOP), right before the write leaves it. Its lease
// runs out: etcd deletes its claim. B takes the lock, with a larger
// revision, and writes. A thaws, and its write goes out.
func pausedHolder(s *labs.Scene, impl *labs.Impl) {
	_, c := startEtcd(s, 1)
	s.Store = "etcd"
	s.TTL = lease
	a := s.Process("A", impl) // a real process, so its pause is a real SIGSTOP
	b := s.Client("B", impl, labs.TTL(long))

	s.Must(a.Lock())
	claim := a.MustDo(claimOp, "")
	// A stop-the-world pause, with the write about to leave.
	w, frozen := a.FreezeBefore(lab13.HookBeforeWrite, writeOrder, dataA)
	if !frozen {
		// The write gave up before sending anything: nothing to freeze.
		// B's turn comes when A releases.
		s.NotFrozen(a, w, b, func() { s.HolderWrites(b, writeOrder, dataB, "the store") })
		showOrder(s, c)
		return
	}
	waitKeyGone(s, c, claim, "A's lease expired: etcd deleted its claim")

	s.Must(b.Lock())
	s.HolderWrites(b, writeOrder, dataB, "the store")

	a.Thaw()
	a.Continue()
	if !w.Within(writeBack) {
		// A's write has not returned, though B still holds the lock: say
		// what A is doing instead of running into the scene's deadline.
		s.Violation("A's write, thawed after its lease ran out, did not return within %v: %s", writeBack, stuckWrite(s, c))
		w.Cancel()
		if !w.Within(writeBack) {
			s.Fatalf("A's write did not return within %v of its context being cancelled: WriteOrder must return when ctx ends", writeBack)
		}
	}
	a.MustDo(toldOp, "10s") // A hears that its lease is gone, after its write
	a.ReleaseAfterFault()
	s.Must(b.Unlock())
	showOrder(s, c)
}

// writeBack bounds the write of a thawed worker: one transaction, which
// etcd answers in milliseconds (a second at most on a loaded machine).
const writeBack = 5 * time.Second

// stuckWrite says why a thawed worker's write has not returned while B
// holds the lock, from etcd's keys: a second claim in line behind B's is
// A's write taking the lock again to retry.
func stuckWrite(s *labs.Scene, c *clientv3.Client) string {
	resp, err := c.Get(s.Ctx, s.Key+"/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	s.Must(err)
	if len(resp.Kvs) > 1 {
		return fmt.Sprintf("etcd refused it, and A is waiting to take the lock again to retry it (%d claims in line: B's and a new one of A's). A refused write must return an error wrapping ErrRefused, not take the lock again: the order has moved on (B wrote it), and a retried write would overwrite B's", len(resp.Kvs))
	}
	return "it is still waiting, with B holding the lock: a write refused because the lock is lost must return an error wrapping ErrRefused at once"
}

func TestLab13_BrokenPausedHolderOverwrites(t *testing.T) {
	t.Parallel()
	labs.Broken(t, titlePause, pausedHolder, etcdUnguarded)
}

func TestLab13_FixedEtcdRefusesStaleWrite(t *testing.T) {
	t.Parallel()
	labs.Fixed(t, titlePause, pausedHolder, etcdGuarded)
}

func TestLab13_Exercise(t *testing.T) {
	t.Parallel()
	labs.Exercise(t, titlePause, pausedHolder, exercise)
}

// Part 2: a holder cut off from ZooKeeper.
//
// A holds the lock through a network that then drops every packet (the
// proxy holds them). A's client notices first (no reply for two thirds of
// the session timeout: Done closes); the server expires A's session when
// the timeout has passed, deleting A's child; B takes the lock with a
// larger zxid and writes. The network heals, and the write A had in flight
// arrives.
func partitionedHolder(s *labs.Scene, impl *labs.Impl) {
	z := rig.StartZooKeeper(s.ServerT(), 1, rig.WithZooKeeperForTests())
	link := s.Link(z.Addrs()[0])
	s.Params[dbParam] = filepath.Join(s.T().TempDir(), "orders.db")
	s.TTL = lease
	a := s.Client("A", impl, labs.Param(zkParam, link.Addr()))
	b := s.Client("B", impl, labs.Param(zkParam, z.Addrs()[0]), labs.TTL(long))
	observer, err := zklock.Connect(z.Addrs(), long)
	s.Must(err)
	defer observer.Close()

	s.Must(a.Lock())
	child := a.MustDo(claimOp, "")
	told := a.Go(toldOp, "10s")
	link.Cut("A cut off from ZooKeeper")
	s.Must(told.Err())
	s.WaitFor("A's child is gone", func() (bool, error) {
		ok, _, err := observer.Conn().Exists(child)
		return !ok, err
	}, "ZooKeeper expired A's session: its child is gone")

	s.Must(b.Lock())
	s.HolderWrites(b, writeOrder, dataB, "the store")

	link.Heal()
	a.MustDo(writeOrder, dataA) // the write A had in flight
	a.MustDo(unlockBack, "")
	s.Must(b.Unlock())
	showRow(s, b)
}

// showRow notes order 1001's row, read through c's store.
func showRow(s *labs.Scene, c *labs.Client) {
	s.T().Helper()
	last, data, _ := strings.Cut(c.MustDo(readOrder, ""), " ")
	s.Note("row %s = %q, last token %s", order, data, last)
}

func TestLab13_BrokenPartitionedHolderUnfenced(t *testing.T) {
	t.Parallel()
	labs.Broken(t, titlePartition, partitionedHolder, zkUnchecked)
}

func TestLab13_FixedZxidFencesPartitionedHolder(t *testing.T) {
	t.Parallel()
	labs.Fixed(t, titlePartition, partitionedHolder, zkFenced)
}

// Part 3: a paused etcd leader.
//
// A holds the lock; the leader freezes (SIGSTOP) and the other two
// members elect a new one. What happens to A's lock depends on A's client,
// not on etcd: a client that knows only the frozen member has nowhere to
// send its keep-alives, and its lease expires; a client that knows every
// member moves to another one once gRPC gives up on the frozen connection
// (its keep-alive pings cannot be more frequent than every 10s), and keeps
// its lease if the lease outlasts that. Either way the lock is never held
// twice.
func pausedLeader(allMembers bool) labs.Scenario {
	return func(s *labs.Scene, impl *labs.Impl) {
		e, c := startEtcd(s, 3)
		leader, err := e.Leader(s.Ctx)
		s.Must(err)
		eps, where := leader.Endpoint(), "the leader only, lease 2s"
		s.TTL = lease
		if allMembers {
			eps, where = strings.Join(e.Endpoints(), ","), "all three members, lease 30s"
			s.TTL = long
		}
		a := s.Client("A", impl, labs.Param(etcdParam, eps))
		b := s.Client("B", impl, labs.TTL(long))
		s.Note("A's client talks to %s; B's to all three", where)

		s.Must(a.Lock())
		claim := a.MustDo(claimOp, "")
		s.Must(leader.Pause())
		s.Fault("SIGSTOP the leader (a long GC pause, a stalled VM)")
		waitNewLeader(s, leader, e.Leader, "another member elected leader")

		if !allMembers {
			waitKeyGone(s, c, claim, "A's lease expired: its keep-alives went to the frozen leader")
			s.Must(b.Lock())
			a.MustDo(toldOp, "10s")
			s.Must(leader.Resume())
			s.Fault("SIGCONT the old leader: it rejoins as a follower")
			a.MustDo(unlockBack, "")
			s.Must(b.Unlock())
			return
		}
		waitRenewed(s, c, claim)
		if ok, err := b.TryLock(); ok || err != nil {
			s.Must(err)
			s.Violation("B got the lock while A held it")
		}
		s.Must(leader.Resume())
		s.Fault("SIGCONT the old leader: it rejoins as a follower")
		a.MustDo(unlockBack, "")
	}
}

// waitRenewed waits until the lease of the claim has been renewed after
// the election: its remaining TTL, as the new leader reports it, goes up
// (the new leader extends every lease once, when it takes over; a later
// rise is a keep-alive from the holder). If the lease expires first, that
// is a violation of what this run shows.
func waitRenewed(s *labs.Scene, c *clientv3.Client, claim string) {
	s.T().Helper()
	resp, err := c.Get(s.Ctx, claim)
	s.Must(err)
	if len(resp.Kvs) == 0 {
		s.Violation("A's claim is gone right after the election")
		return
	}
	id := clientv3.LeaseID(resp.Kvs[0].Lease)
	last := int64(-1)
	s.Eventually("A's lease renewed or gone", func() (bool, error) {
		r, err := c.TimeToLive(s.Ctx, id)
		if err != nil {
			return false, err
		}
		if r.TTL <= 0 {
			s.Violation("A's lease expired after the election although A's client knew two other members")
			return true, nil
		}
		rose := last >= 0 && r.TTL > last
		last = r.TTL
		return rose, nil
	})
	s.Note("A's lease renewed: its keep-alives reached the new leader")
}

func TestLab13_FixedPausedLeaderClientOnLeaderOnly(t *testing.T) {
	t.Parallel()
	labs.Fixed(t, titleLeader, pausedLeader(false), etcdGuarded)
}

func TestLab13_FixedPausedLeaderClientOnAllMembers(t *testing.T) {
	t.Parallel()
	labs.Fixed(t, titleLeader, pausedLeader(true), etcdGuarded)
}

// Part 4: lab 07's failover, on Redis and on the consensus systems.
//
// A holds the lock and works; the server A's lock lives on dies (the
// Redis primary; the etcd or ZooKeeper leader) and the system carries on
// without it; B asks for the same lock.
type failover struct {
	// start starts the servers and returns the options of A's and B's
	// clients and the failover, which returns B's options.
	start func(s *labs.Scene) (forA []labs.ClientOption, fail func() []labs.ClientOption)
}

func (f failover) run(s *labs.Scene, impl *labs.Impl) {
	s.TTL = long
	forA, fail := f.start(s)
	a := s.Client("A", impl, forA...)
	s.Must(a.Lock())
	a.Enter()
	forB := fail()
	b := s.Client("B", impl, forB...)
	got := b.LockWithin(failoverWait) == nil
	if got {
		b.Enter()
		b.Write("refund order 1001")
		b.Exit()
		s.Must(b.Unlock())
	}
	a.Write("refund order 1001")
	a.Exit()
	a.ReleaseAfterFault()
	if !got {
		s.Must(b.Lock())
		b.Enter()
		b.Exit()
		s.Must(b.Unlock())
	}
}

// redisFailover is lab 07's: replication held back, the primary killed, the
// replica promoted.
var redisFailover = failover{start: func(s *labs.Scene) ([]labs.ClientOption, func() []labs.ClientOption) {
	r := s.Replicated(1)
	s.Note("Redis: a primary and a replica, in sync")
	r.HoldBack(0)
	return []labs.ClientOption{labs.Addrs(r.Primary.Addr())}, func() []labs.ClientOption {
		return []labs.ClientOption{labs.Addrs(r.Failover("the primary").Addr())}
	}
}}

// etcdFailover kills etcd's leader.
var etcdFailover = failover{start: func(s *labs.Scene) ([]labs.ClientOption, func() []labs.ClientOption) {
	e, _ := startEtcd(s, 3)
	s.Note("etcd: 3 members")
	return nil, func() []labs.ClientOption {
		leader, err := e.Leader(s.Ctx)
		s.Must(err)
		s.KillNode("the leader", leader)
		s.Must(e.WaitHealthy(s.Ctx))
		s.Fault("another member elected leader")
		return nil
	}
}}

// zkFailover kills ZooKeeper's leader.
var zkFailover = failover{start: func(s *labs.Scene) ([]labs.ClientOption, func() []labs.ClientOption) {
	z := rig.StartZooKeeper(s.ServerT(), 3, rig.WithZooKeeperForTests())
	s.Params[zkParam] = strings.Join(z.Addrs(), ",")
	s.Params[dbParam] = filepath.Join(s.T().TempDir(), "orders.db")
	s.Note("ZooKeeper: an ensemble of 3")
	return nil, func() []labs.ClientOption {
		leader, err := z.Leader(s.Ctx)
		s.Must(err)
		s.KillNode("the leader", leader)
		waitNewLeader(s, leader, z.Leader, "another server elected leader")
		return nil
	}
}}

func TestLab13_BrokenRedisFailoverGrantsTwice(t *testing.T) {
	t.Parallel()
	labs.Broken(t, titleFailover, redisFailover.run, redisLock)
}

func TestLab13_FixedEtcdFailoverKeepsLock(t *testing.T) {
	t.Parallel()
	labs.Fixed(t, titleFailover, etcdFailover.run, etcdGuarded)
}

func TestLab13_FixedZooKeeperFailoverKeepsLock(t *testing.T) {
	t.Parallel()
	labs.Fixed(t, titleFailover, zkFailover.run, zkFenced)
}
